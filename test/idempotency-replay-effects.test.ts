// Issue 41: a retry with the same key gets the first answer and nothing runs again (found by the
// review of 7b8117b, which looked keys up at the handler's first statement for every route: a
// replayed schema reload recorded nothing again, but its handler ran up to its first statement);
// a replay is logged as what it answered; and the bot's keyed polls of an idle queue sweep the
// expired answers as any keyed request does.
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { admin } from './helpers/admin.js';
import { createTestApp, PRODUCTION_KEY, type TestApp } from './helpers/app.js';
import { chatId, type Person } from './helpers/identity.js';
import { storeName } from './helpers/stores.js';

const bot = { authorization: PRODUCTION_KEY };
let output = '';
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    output += chunk.toString();
    done();
  },
});
const logLines = () => output.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, any>);

describe(`a replayed or refused request runs nothing again, on ${storeName}`, () => {
  let t: TestApp;
  let director: Person;
  let resets = 0;
  beforeAll(async () => {
    t = await createTestApp({ logger: pino({ level: 'info' }, sink) });
    director = await admin(t);
    // Count what POST /admin/schema/reload does before its first statement: every pooled
    // connection of the instance is dropped at its next checkout (postgres.ts, generation++).
    const db = t.environments.get('production')!.db as { resetStatements(): void };
    const reset = db.resetStatements.bind(db);
    db.resetStatements = () => {
      resets++;
      reset();
    };
  });
  afterAll(() => t?.close());
  beforeEach(() => {
    output = '';
  });

  it("a schema reload's replay (and its refusal for another body) records nothing again; it drops the prepared statements again, its only effect before its key is looked up", async () => {
    const key = randomUUID();
    const send = (reason: string) => t.app.inject({ method: 'POST', url: '/admin/schema/reload', headers: { ...director.headers, 'idempotency-key': key }, payload: { reason } });
    const recorded = async () => (await t.db.production.query<{ n: number }>("select count(*)::int as n from audit_log where action = 'admin.schema_reloaded'")).rows[0]!.n;
    const [before, audited] = [resets, await recorded()];
    const first = await send('columns added by hand');
    expect(first.statusCode).toBe(200);
    expect(resets - before).toBe(1);
    const replay = await send('columns added by hand');
    expect({ status: replay.statusCode, replayed: replay.headers['idempotent-replayed'], body: replay.json() }).toEqual({ status: 200, replayed: 'true', body: first.json() });
    const reused = await send('another reason');
    expect(reused.json().code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await recorded()).toBe(audited + 1);
    // The reload drops them before its transaction takes a connection (keyLookedUpLate): a reconnect per pooled connection.
    expect(resets - before).toBe(3);
  });

  it('a replay is logged as what it answered: no line says the request failed with 409 IDEMPOTENCY_KEY_DECIDED', async () => {
    const key = randomUUID();
    const body = { report_id: `RV-LOG-${process.pid}-${chatId()}`, reporter: chatId(), reported: chatId(), reason: 'Harassment in voice chat', notes: 'n', evidence: 'e' };
    const send = () => t.app.inject({ method: 'POST', url: '/reports/create', headers: { ...bot, 'idempotency-key': key }, payload: body });
    expect((await send()).statusCode).toBe(201);
    output = '';
    const replay = await send();
    expect({ status: replay.statusCode, replayed: replay.headers['idempotent-replayed'] }).toEqual({ status: 201, replayed: 'true' });
    const requestId = replay.headers['x-request-id'];
    const about = logLines().filter((l) => l.reqId === requestId || l.request_id === requestId);
    const statuses = about.map((l) => l.status ?? l.res?.statusCode).filter((s) => s !== undefined);
    expect({ statuses, codes: about.map((l) => l.code).filter(Boolean) }).toEqual({ statuses: [201], codes: [] });
  });
});

describe(`the expired answers are swept after a keyed request, on ${storeName}`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  it("a keyed poll of an idle queue (the bot's steady traffic) sweeps the answers past IDEMPOTENCY_KEY_TTL_HOURS, as any keyed request does", async () => {
    const key = randomUUID();
    const body = { report_id: `RV-TTL-${process.pid}-${chatId()}`, reporter: chatId(), reported: chatId(), reason: 'Harassment in voice chat', notes: 'n', evidence: 'e' };
    expect((await t.app.inject({ method: 'POST', url: '/reports/create', headers: { ...bot, 'idempotency-key': key }, payload: body })).statusCode).toBe(201);
    // A day later: the answer (it names the reporter and the reported) is past its TTL.
    await t.db.production.query("update idempotency_keys set created_at = now() - interval '25 hours' where key = $1", [key]);
    // More than the minute between two sweeps of an instance has passed.
    const later = Date.now() + 61_000;
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => later);
    try {
      // The queue is empty and this instance knows it (an unkeyed poll found nothing).
      expect((await t.app.inject({ url: '/actions/next', headers: bot })).statusCode).toBe(204);
      expect(t.environments.get('production')!.idleQueues.get('actions')).toBe(true);
      for (let i = 0; i < 3; i++) expect((await t.app.inject({ url: '/actions/next', headers: { ...bot, 'idempotency-key': randomUUID() } })).statusCode).toBe(204);
    } finally {
      clock.mockRestore();
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    const left = await t.db.production.query('select key from idempotency_keys where key = $1', [key]);
    expect(left.rows, 'an answer kept past its TTL, never swept').toEqual([]);
  });
});
