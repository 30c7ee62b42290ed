// Requests derived from /openapi.json for tests that must reach every operation without anyone
// listing them (issue 28's canary crawl): each operation's path parameters filled from pools of
// values that exist, and query variants made from each declared query parameter (every enum
// value, both booleans, every value a "Comma list of …" names, the largest limit, pool values for
// the rest). A new route or parameter is crawled the day it is declared.
import type { TestApp } from './app.js';

interface ParameterSchema {
  type?: string;
  enum?: string[];
  minimum?: number;
  maximum?: number;
  default?: unknown;
  pattern?: string;
  maxLength?: number;
}

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  description?: string;
  schema: ParameterSchema;
}

export interface Operation {
  method: string;
  path: string;
  /** `GET /reports/{report_id}`: the key of the tables that name operations. */
  label: string;
  summary: string;
  /** The credentials the route declares: `apiKey`, `session`, both, or none (public). */
  credentials: string[];
  parameters: Parameter[];
}

interface OpenApiDocument {
  paths: Record<string, Record<string, { summary?: string; security?: Record<string, unknown>[]; parameters?: Parameter[] }>>;
}

/** The operations of /openapi.json with one method (lower case, as the document keys them). */
export async function operationsOf(t: TestApp, method = 'get'): Promise<Operation[]> {
  const doc = (await t.app.inject({ url: '/openapi.json' })).json() as OpenApiDocument;
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([m]) => m === method)
      .map(([m, op]) => ({
        method: m.toUpperCase(),
        path,
        label: `${m.toUpperCase()} ${path}`,
        summary: op.summary ?? '',
        credentials: (op.security ?? []).flatMap((s) => Object.keys(s)),
        parameters: op.parameters ?? [],
      })),
  );
}

/** Values by parameter name; `text` serves the free-text parameters that no pool names. */
export type Pools = Record<string, readonly string[]>;

const fits = (schema: ParameterSchema, value: string) =>
  (schema.maxLength === undefined || value.length <= schema.maxLength) && (schema.pattern === undefined || new RegExp(schema.pattern).test(value));

/** The values of a "Comma list of a, b, c" description; empty when it names no values. */
function commaListValues(parameter: Parameter): string[] {
  const match = /comma list of ([^;.]+)/i.exec(parameter.description ?? '');
  const values = match ? match[1]!.split(',').map((s) => s.trim()).filter((s) => /^[a-z_]+$/.test(s)) : [];
  return values.length >= 2 ? values : [];
}

/**
 * Values worth sending for one query parameter. Enums, booleans and comma lists yield every value
 * they admit (a comma list that names no values borrows the enum of the parameter it is the plural
 * of: `statuses` from `status`), and all of them at once; strings take their pool (by name, else
 * the `text` pool: a free-text parameter is a place a canary could come back from), kept to what
 * the schema accepts; integers are left at their base value.
 */
function valuesOf(parameter: Parameter, siblings: Parameter[], pools: Pools): { values: string[]; fromPool: boolean } {
  const schema = parameter.schema;
  if (schema.enum) return { values: schema.enum, fromPool: false };
  if (schema.type === 'boolean') return { values: ['true', 'false'], fromPool: false };
  if (schema.type === 'integer' || schema.type === 'number') return { values: [], fromPool: false };
  let list = commaListValues(parameter);
  if (list.length === 0 && /comma/i.test(parameter.description ?? '')) {
    list = siblings.find((s) => s !== parameter && s.schema.enum && parameter.name.startsWith(s.name))?.schema.enum ?? [];
  }
  if (list.length > 0) return { values: [...list, list.join(',')], fromPool: false };
  const pool = pools[parameter.name] ?? pools.text ?? [];
  return { values: pool.filter((v) => fits(schema, v)), fromPool: true };
}

/**
 * The query strings to send: the bare request (required parameters at their default), the same
 * with every `limit` at its maximum, and each other parameter's values one at a time on top of
 * both (pool values, which can be many, only on the largest page).
 */
export function queryVariants(op: Operation, pools: Pools): Record<string, string>[] {
  const query = op.parameters.filter((p) => p.in === 'query');
  const bare: Record<string, string> = {};
  for (const p of query.filter((q) => q.required)) {
    const value = p.schema.default ?? p.schema.minimum ?? valuesOf(p, query, pools).values[0];
    if (value !== undefined) bare[p.name] = String(value);
  }
  const largest = { ...bare };
  for (const p of query) if (p.name === 'limit' && p.schema.maximum !== undefined) largest[p.name] = String(p.schema.maximum);
  const variants = [bare, largest];
  for (const p of query) {
    const { values, fromPool } = valuesOf(p, query, pools);
    for (const value of values) {
      for (const base of fromPool ? [largest] : [bare, largest]) variants.push({ ...base, [p.name]: value });
    }
  }
  const seen = new Set<string>();
  return variants.filter((v) => {
    const key = new URLSearchParams(v).toString();
    return !seen.has(key) && seen.add(key);
  });
}

/**
 * Every URL to crawl for one operation; throws when a path parameter has no pool (map it first).
 * `light`: only the bare request and the largest page, for a crawl repeated after every step.
 */
export function urlsOf(op: Operation, pools: Pools, light = false): string[] {
  let paths = [op.path];
  for (const p of op.parameters.filter((q) => q.in === 'path')) {
    const pool = pools[p.name];
    if (!pool || pool.length === 0) throw new Error(`${op.label}: no values for the path parameter ${p.name}; add a pool for it`);
    paths = paths.flatMap((path) => pool.map((value) => path.replace(`{${p.name}}`, encodeURIComponent(value))));
  }
  const queries = queryVariants(op, pools).slice(0, light ? 2 : undefined).map((q) => new URLSearchParams(q).toString());
  return paths.flatMap((path) => queries.map((q) => (q ? `${path}?${q}` : path)));
}

/** Runs `fn` over `items` a few at a time (app.inject is in-process: this only overlaps the waits). */
export async function inBatches<T, R>(items: readonly T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += size) results.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return results;
}
