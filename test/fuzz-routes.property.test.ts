// Every operation of /openapi.json, sent bad input as a hostile client would (fast-check, seeded):
// wrong types, nulls, huge and empty strings, NUL characters, lone surrogates and emoji, unknown
// and server-managed fields, out-of-range numbers, invalid JSON and wrong media types, with a valid
// credential. Whatever comes back: never a 5xx, always the error envelope for a refusal, and a
// refused request writes nothing (the row count of every table is unchanged), and a 2xx JSON answer
// carries success: true (spec General conventions 1), as every 2xx response schema declares it.
// On failure vitest prints fast-check's seed and the shrunk request; FUZZ_SEED replays a seed.
// `npm test` sends a few requests per operation; the slow step (TEST_RUNS=long) many more.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { player, startRelay, type StandInRelay } from '../bench/lib/game-relay.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { admin } from './helpers/admin.js';
import type { Person } from './helpers/identity.js';
import { runs, seedOf } from './helpers/runs.js';

const SEED = seedOf('FUZZ_SEED', 20261123);
/** Generated requests per operation: a few in every run, enough to reach each kind of bad input in long ones. */
const RUNS = runs(4, 60);

interface Operation {
  method: string;
  path: string;
  security: string[];
  params: { name: string; in: string; schema?: JsonSchema }[];
  hasBody: boolean;
  bodySchema: JsonSchema | undefined;
}

let t: TestApp;
let relay: StandInRelay;
let director: Person;
let operations: Operation[];
let tables: string[];
let doc: OpenApiDoc;

interface OpenApiDoc {
  paths: Record<string, Record<string, {
    security?: Record<string, unknown>[];
    parameters?: { name: string; in: string; schema?: JsonSchema }[];
    requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
    responses?: Record<string, { content?: Record<string, { schema?: JsonSchema }> }>;
  }>>;
  components?: { schemas?: Record<string, JsonSchema> };
}

beforeAll(async () => {
  // A game relay, so the lookup answers 200 (online or not) instead of 503 NOT_CONFIGURED.
  relay = await startRelay({ body: [player('NightOwl_88', 1), player('quietstorm', 100)] });
  t = await createTestApp({ env: { GAME_RELAY_URLS: relay.url, GAME_SERVER_KEY: 'srv-key' } });
  director = await admin(t);
  doc = (await t.app.inject({ url: '/openapi.json' })).json() as OpenApiDoc;
  operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      security: (op.security ?? []).flatMap((s) => Object.keys(s)),
      params: op.parameters ?? [],
      hasBody: op.requestBody !== undefined,
      bodySchema: op.requestBody?.content?.['application/json']?.schema,
    })),
  );
  const { rows } = await t.db.production.query<{ name: string }>(
    `select tablename as name from pg_tables where schemaname = 'public' and tablename not in ('schema_migrations') order by 1`,
  );
  tables = rows.map((r) => r.name);
});
afterAll(async () => {
  await t.close();
  await relay.close();
});

/** Every table's row count, in one statement. */
async function rowCounts(): Promise<Record<string, number>> {
  const { rows } = await t.db.production.query<Record<string, number>>(
    `select ${tables.map((name) => `(select count(*)::int from "${name}") as "${name}"`).join(', ')}`,
  );
  return rows[0]!;
}

// --- Bad values ---
const NUL_AND_SURROGATES = ['a\u0000b', '\u0000', '\ud800', 'x\udfffy', 'ok\u0000'];
const hostileString = fc.oneof(
  { arbitrary: fc.constantFrom(...NUL_AND_SURROGATES), weight: 3 },
  { arbitrary: fc.constantFrom('', ' ', '😀'.repeat(40), 'x'.repeat(5_000), '%00', '../../etc/passwd', "'; drop table reports; --", '\\u0000'), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 1 },
  { arbitrary: fc.string({ maxLength: 20 }), weight: 1 },
);
const hostileNumber = fc.oneof(
  fc.constantFrom(-1, 0, 2 ** 31, 2 ** 53, -(2 ** 63), 1e308, 0.5, Number.MAX_SAFE_INTEGER),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
const hostileValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    hostileString,
    hostileNumber,
    fc.constantFrom(null, true, false, [], {}),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(hostileString, tie('value'), { maxKeys: 3 }),
  ),
})).value;
/** Field names: the API's own (server-managed ones included) and others. */
const fieldName = fc.oneof(
  fc.constantFrom('report_id', 'reason', 'status', 'user_id', 'chat_id', 'name', 'limit', 'offset', 'search', 'profile', 'created_at', 'updated_at', 'id', 'issued_by', 'agent_rank', 'clearance_level', 'result', 'note', 'type', 'url'),
  hostileString,
);
const hostileObject = fc.dictionary(fieldName, hostileValue, { maxKeys: 6 });
const deepJson = fc.integer({ min: 50, max: 5_000 }).map((depth) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth));

interface JsonSchema {
  $ref?: string;
  const?: unknown;
  allOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  anyOf?: JsonSchema[];
}

/** A value the schema accepts (or nearly: the point is to get past it to what lies behind). */
function plausible(schema: JsonSchema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return fc.constant(null);
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s) => plausible(s, depth + 1)));
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'string':
      if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern)).filter((v) => v.length <= (schema.maxLength ?? 200) && v.length >= (schema.minLength ?? 0));
      if (schema.format === 'date-time') return fc.constant(new Date(Date.now() + 86_400_000).toISOString());
      if (schema.format === 'uri') return fc.constant('https://evidence.example/clip');
      return fc.string({ minLength: Math.max(1, schema.minLength ?? 1), maxLength: Math.min(schema.maxLength ?? 20, 20) });
    case 'integer':
    case 'number':
      return fc.integer({ min: schema.minimum ?? 0, max: Math.min(schema.maximum ?? 100, 1_000_000) });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(plausible(schema.items, depth + 1), { maxLength: 2 });
    case 'object': {
      const props = schema.properties ?? {};
      const required = new Set(schema.required ?? []);
      return fc.record(Object.fromEntries(Object.entries(props).map(([k, v]) => [k, plausible(v, depth + 1)])), { requiredKeys: [...required].filter((k) => k in props) });
    }
    default:
      return fc.constant('x');
  }
}

/** A plausible body with one string (or a key) carrying a NUL or a lone surrogate, at any depth. */
function poisoned(value: unknown, bad: string, at: number): unknown {
  if (typeof value === 'string') return value + bad;
  if (Array.isArray(value)) return value.length === 0 ? [bad] : value.map((v, i) => (i === at % value.length ? poisoned(v, bad, at) : v));
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value);
    if (entries.length === 0) return { [`k${bad}`]: 'v' };
    const i = at % entries.length;
    return Object.fromEntries(entries.map(([k, v], j) => (j === i ? (at % 3 === 0 ? [`${k}${bad}`, v] : [k, poisoned(v, bad, Math.floor(at / 2))]) : [k, v])));
  }
  return bad;
}

type Body = { kind: 'json'; value: unknown } | { kind: 'raw'; text: string; type: string };
const bodyFor = (schema: JsonSchema | undefined): fc.Arbitrary<Body> => fc.oneof(
  { arbitrary: fc.tuple(plausible(schema), fc.constantFrom(...NUL_AND_SURROGATES), fc.nat(50)).map(([v, bad, at]) => ({ kind: 'json' as const, value: poisoned(v, bad, at) })), weight: 3 },
  { arbitrary: hostileBody, weight: 2 },
);
const hostileBody: fc.Arbitrary<Body> = fc.oneof(
  hostileObject.map((value) => ({ kind: 'json' as const, value })),
  hostileValue.map((value) => ({ kind: 'json' as const, value })),
  fc.constantFrom('{', '{"a":', 'null', '[]', '"text"', '{"a":1}{"b":2}', '\u0000').map((text) => ({ kind: 'raw' as const, text, type: 'application/json' })),
  deepJson.map((text) => ({ kind: 'raw' as const, text, type: 'application/json' })),
  fc.constantFrom('text/plain', 'application/xml', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded').map((type) => ({ kind: 'raw' as const, text: 'a=%00&b=1', type })),
);

/**
 * Percent-encoding as a client would send it; a lone surrogate, which has no UTF-8 form, goes as the
 * three bytes a careless encoder writes for it (what a hostile client can send).
 */
function encode(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null');
  let out = '';
  for (const char of text) {
    const unit = char.charCodeAt(0);
    out += char.length === 1 && unit >= 0xd800 && unit <= 0xdfff
      ? [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('')
      : encodeURIComponent(char);
  }
  return out;
}

/** A request to `op` with generated path parameters, query and body. */
function requestFor(op: Operation) {
  const pathParams = op.params.filter((p) => p.in === 'path').map((p) => p.name);
  const queryNames = op.params.filter((p) => p.in === 'query').map((p) => p.name);
  return fc.record({
    path: fc.tuple(...pathParams.map(() => fc.oneof(hostileString, hostileNumber.map(String)))),
    query: fc.dictionary(
      fc.oneof({ arbitrary: fc.constantFrom(...(queryNames.length > 0 ? queryNames : ['limit'])), weight: 3 }, { arbitrary: fieldName, weight: 1 }),
      fc.oneof(hostileString, hostileNumber, hostileValue),
      { maxKeys: 4 },
    ),
    body: op.hasBody || op.method !== 'GET' ? fc.option(bodyFor(op.bodySchema), { nil: undefined, freq: 4 }) : fc.constant(undefined),
  });
}

function credentialFor(op: Operation): Record<string, string> {
  // A valid credential for the route, preferring the key where both are accepted.
  if (op.security.includes('apiKey')) return { authorization: PRODUCTION_KEY };
  if (op.security.includes('session')) return director.headers;
  return {};
}

describe('every operation of the OpenAPI document, sent hostile input', () => {
  it('has them all', () => {
    expect(operations.length).toBeGreaterThanOrEqual(50);
  });

  it('declares success: true, required, in every 2xx JSON response schema (so serialization keeps it)', () => {
    const resolve = (schema: JsonSchema): JsonSchema =>
      schema.$ref === undefined ? schema : resolve(doc.components?.schemas?.[schema.$ref.replace('#/components/schemas/', '')] ?? {});
    const declaresSuccess = (raw: JsonSchema): boolean => {
      const schema = resolve(raw);
      const branches = schema.anyOf ?? schema.oneOf;
      if (branches) return branches.every(declaresSuccess);
      if (schema.allOf) return schema.allOf.some(declaresSuccess);
      const success = schema.properties?.success && resolve(schema.properties.success);
      const onlyTrue = success?.const === true || (success?.enum?.length === 1 && success.enum[0] === true);
      return onlyTrue && (schema.required ?? []).includes('success');
    };
    const lacking = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).flatMap(([method, op]) =>
        Object.entries(op.responses ?? {})
          .filter(([status]) => /^2\d\d$/.test(status))
          .flatMap(([status, response]) => {
            const schema = response.content?.['application/json']?.schema;
            return schema === undefined || declaresSuccess(schema) ? [] : [`${method.toUpperCase()} ${path} ${status}`];
          }),
      ),
    );
    expect(lacking).toEqual([]);
  });

  it('answers no 5xx, refuses in the envelope and writes nothing when it refuses', { timeout: 240_000 }, async () => {
    for (const op of operations) {
      // Afresh for each operation: one may have signed the last one out.
      director = await admin(t);
      await fc.assert(
        fc.asyncProperty(requestFor(op), async ({ path, query, body }) => {
          let url = op.path;
          op.params.filter((p) => p.in === 'path').forEach((p, i) => (url = url.replace(`{${p.name}}`, encode(path[i]))));
          const search = Object.entries(query).map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&');
          if (search) url += `?${search}`;
          const headers: Record<string, string> = { ...credentialFor(op) };
          let payload: string | undefined;
          if (body?.kind === 'json') {
            headers['content-type'] = 'application/json';
            payload = JSON.stringify(body.value) ?? 'null';
          } else if (body?.kind === 'raw') {
            headers['content-type'] = body.type;
            payload = body.text;
          }
          const before = await rowCounts();
          const res = await t.app.inject({ method: op.method as 'GET', url, headers, ...(payload === undefined ? {} : { payload }) });
          const where = `${op.method} ${url.slice(0, 200)} (${headers['content-type'] ?? 'no body'})`;
          // 503 is the spec's answer for an integration this test app does not configure.
          const unconfigured = res.statusCode === 503 && /"code":"NOT_CONFIGURED"/.test(res.body);
          expect(res.statusCode < 500 || unconfigured, `${where} answered ${res.statusCode} ${res.body.slice(0, 300)}`).toBe(true);
          if (res.statusCode >= 200 && res.statusCode < 300 && /^application\/json/.test(String(res.headers['content-type'] ?? ''))) {
            expect(res.json(), `${where} answered ${res.statusCode} ${res.body.slice(0, 300)}`).toEqual(expect.objectContaining({ success: true }));
          }
          if (res.statusCode >= 400) {
            const contentType = String(res.headers['content-type'] ?? '');
            expect(contentType, where).toMatch(/^application\/json/);
            const refusal = res.json() as Record<string, unknown>;
            expect(refusal, `${where}: ${res.body.slice(0, 300)}`).toEqual(expect.objectContaining({ success: false, error: expect.any(String) }));
            expect(await rowCounts(), `${where} was refused with ${res.statusCode} but wrote`).toEqual(before);
          }
        }),
        { seed: SEED, numRuns: RUNS },
      );
    }
  });
});
