// The import graph of src/ points one way: no cycle (a type-only import counts, since a type that
// two modules need belongs in a third), and the platform imports no domain, only itself and the
// configuration. Read from the source's static `import … from` and `export … from` lines.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../../src');
const FROM = /^\s*(?:import|export)\b[^;]*?\bfrom\s+'(\.[^']+)'/gm;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Each file (relative to src/) and the files it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const targets = [...readFileSync(file, 'utf8').matchAll(FROM)].map((m) => relative(SRC, resolve(dirname(file), m[1]!)).replace(/\.js$/, '.ts'));
    graph.set(relative(SRC, file), targets);
  }
  return graph;
}

/** Every strongly connected component of more than one file, or of one file importing itself (Tarjan). */
export function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    indexOf.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indexOf.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indexOf.get(w)!));
    }
    if (low.get(v) !== indexOf.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || graph.get(v)?.includes(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!indexOf.has(v)) visit(v);
  return found;
}

describe('the import graph of src/', () => {
  const graph = importGraph();

  it('is read: every relative import names a file that exists', () => {
    expect(graph.size).toBeGreaterThan(150);
    const missing = [...graph].flatMap(([file, targets]) => targets.filter((t) => !graph.has(t)).map((t) => `${file} -> ${t}`));
    expect(missing).toEqual([]);
  });

  it('has no cycle', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it('would name a cycle, type-only imports included', () => {
    const planted = new Map([
      ['platform/audit-chain/seal.ts', ['platform/audit-chain/reseal.ts']],
      ['platform/audit-chain/reseal.ts', ['platform/audit-chain/hashes.ts', 'platform/audit-chain/seal.ts']],
      ['platform/audit-chain/hashes.ts', []],
      ['a.ts', ['a.ts']],
    ]);
    expect(cycles(planted)).toEqual([['platform/audit-chain/reseal.ts', 'platform/audit-chain/seal.ts'], ['a.ts']]);
    expect([...'import type { ChainHead } from \'./seal.js\';'.matchAll(FROM)].map((m) => m[1])).toEqual(['./seal.js']);
  });

  it('keeps the platform below the domains: src/platform imports only itself and the configuration', () => {
    const outward = [...graph]
      .filter(([file]) => file.startsWith('platform/'))
      .flatMap(([file, targets]) => targets.filter((t) => !t.startsWith('platform/') && t !== 'config.ts' && !t.startsWith('config/')).map((t) => `${file} -> ${t}`));
    expect(outward).toEqual([]);
  });
});
