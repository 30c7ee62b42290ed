// How one variable is read: trimmed, an empty value taken as unset, a malformed one reported with
// its parser's message (and a connection URL's password never shown).
import { describeConnectionUrl } from '../platform/db/connection-url.js';

export type Env = Record<string, string | undefined>;

/** The variable `name` through `parse`, or `fallback` when it is unset or malformed. */
export type Read = <T>(name: string, fallback: T, parse: (raw: string) => T) => T;

export function reader(env: Env, problems: string[]): Read {
  // Each reader records a problem naming the variable instead of throwing, so one boot reports all.
  return <T>(name: string, fallback: T, parse: (raw: string) => T): T => {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') return fallback;
    try {
      return parse(raw);
    } catch (err) {
      // A connection URL may carry a password: the report names its hosts, never the URL.
      const got = /_DATABASE_\w*URLS?$/.test(name) ? describeConnectionUrl(raw) : JSON.stringify(raw);
      problems.push(`${name}: ${(err as Error).message} (got ${got})`);
      return fallback;
    }
  };
}
