// The OpenAPI document as client generators read it (issue 31). Every operation has an
// operationId, unique, and the list of them is the committed test/openapi-operation-ids.json: a
// generated client's method names are these ids, so renaming one breaks every client built on the
// document. `servers` is the service's own origin, `info.version` and `info.license` what
// package.json says. And the document `npm run lint:openapi` lints is this one.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERY_ROUTE_ENV, servedOpenApiDocument } from '../scripts/openapi-document.js';
import { PROJECT_ROOT } from '../src/platform/paths.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { createTestDatabase, type TestDatabase } from './helpers/stores.js';

interface OpenApiDocument {
  servers?: unknown;
  info: { version: string; license?: unknown };
  paths: Record<string, Record<string, { operationId?: string }>>;
}

interface OperationId {
  method: string;
  path: string;
  operationId: string | undefined;
}

const SNAPSHOT = join(PROJECT_ROOT, 'test', 'openapi-operation-ids.json');
const packageJson = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string; license?: string };

/** By code unit, as the committed file is sorted: the same order under any locale. */
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

let t: TestApp;
let body: string;
let doc: OpenApiDocument;
let operations: OperationId[];

beforeAll(async () => {
  // DEMO_LOCAL_SIGNIN adds GET and POST /auth/local: every operation any configuration serves.
  t = await createTestApp({ env: { ...EVERY_ROUTE_ENV } });
  const res = await t.app.inject({ url: '/openapi.json' });
  expect(res.statusCode).toBe(200);
  body = res.body;
  doc = res.json() as OpenApiDocument;
  operations = Object.entries(doc.paths)
    .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ method: method.toUpperCase(), path, operationId: op.operationId })))
    .sort((a, b) => compare(a.path, b.path) || compare(a.method, b.method));
});
afterAll(() => t.close());

describe('operationIds', () => {
  it('every operation declares one, lowerCamelCase verb and noun', () => {
    expect(operations.length).toBeGreaterThanOrEqual(100);
    expect(operations.filter((op) => op.operationId === undefined).map((op) => `${op.method} ${op.path}`)).toEqual([]);
    expect(operations.filter((op) => !/^[a-z]+(?:[A-Z][a-z]*)+$/.test(op.operationId!)).map((op) => op.operationId)).toEqual([]);
  });

  it('no two operations share one', () => {
    const seen = new Map<string, string[]>();
    for (const op of operations) seen.set(op.operationId!, [...(seen.get(op.operationId!) ?? []), `${op.method} ${op.path}`]);
    expect([...seen].filter(([, ops]) => ops.length > 1)).toEqual([]);
  });

  it('are the committed list: renaming one breaks every generated client', () => {
    const committed = JSON.parse(readFileSync(SNAPSHOT, 'utf8')) as OperationId[];
    expect(
      operations,
      'The operations of /openapi.json differ from test/openapi-operation-ids.json. A new operation: add its line. ' +
        'A changed or removed operationId is a breaking change for every client generated from the document (its ' +
        'method name): keep the old id unless the API is meant to break, and then say so in the release notes.',
    ).toEqual(committed);
  });
});

describe('the document', () => {
  it("names the service's own origin, the release and the package's licence", () => {
    expect(doc.servers).toEqual([{ url: '/' }]);
    expect(doc.info.version).toBe(packageJson.version);
    expect(packageJson.license).toBe('UNLICENSED');
    expect(doc.info.license).toEqual({ name: packageJson.license });
  });

  it('GET /auth/chat/login is a redirect with its Location header', () => {
    const login = doc.paths['/auth/chat/login']!.get as { responses: Record<string, { headers?: Record<string, unknown> }> };
    expect(Object.keys(login.responses).filter((status) => status.startsWith('2') || status.startsWith('3'))).toEqual(['302']);
    expect(login.responses['302']!.headers).toEqual({ Location: { schema: { type: 'string' }, description: 'Where the browser goes next' } });
  });

  it('is the document npm run lint:openapi lints (scripts/openapi-document.ts), byte for byte', async () => {
    // The same builder on this run's store: the databases are the only difference, and the document does not read them.
    const databases: TestDatabase[] = [];
    const linted = await servedOpenApiDocument({
      openDb: async () => {
        const database = await createTestDatabase();
        databases.push(database);
        return database.db;
      },
    });
    await Promise.all(databases.map((database) => database.drop()));
    expect(linted).toBe(body);
  }, 60_000);
});
