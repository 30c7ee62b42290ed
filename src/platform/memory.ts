// PGlite's first start runs initdb, which grows a WebAssembly memory of several hundred MB that
// is garbage once the database is open; an idle process may never run the major GC that returns
// it (measured: 850 MB RSS for 20 s idle, 400 MB right after one full GC). One forced collection
// after the embedded databases open brings the idle footprint down where it belongs.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export function collectGarbageOnce(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (() => void) | undefined;
  gc?.();
}
