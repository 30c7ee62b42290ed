// The tamper-evident audit trail (issue 21): every events and audit_log row sealed into one
// SHA-256 chain, verified by walking it; tampering through SQL behind the service's back is
// caught and the right row named. On both stores.
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { rowHashIn } from '../src/platform/audit-chain/forms.js';
import { chainHash, GENESIS_HASH } from '../src/platform/audit-chain/hashes.js';
import { personalLeaves } from '../src/platform/audit-chain/personal-fields.js';
import { candidatesSql, readHead, sealAvailable } from '../src/platform/audit-chain/seal.js';
import { AuditSealer, STOP_DEADLINE_MS } from '../src/platform/audit-chain/sealer.js';
import { pendingRows, verifyChain, type Verification } from '../src/platform/audit-chain/verify.js';
import { resetDemo } from '../src/demo/seed.js';
import { recordAudit } from '../src/platform/audit.js';
import type { Db } from '../src/platform/db/types.js';
import { recordEvent } from '../src/platform/events.js';
import { createTestApp, PRODUCTION_KEY, silentLog, type TestApp } from './helpers/app.js';
import { signedIn } from './helpers/identity.js';
import { reportCrudHelpers } from './helpers/reports.js';
import { createTestDatabase, storeName, type TestDatabase } from './helpers/stores.js';

const count = async (db: Db, sql: string, values: unknown[] = []) => (await db.query<{ n: number }>(`select count(*)::int as n from ${sql}`, values)).rows[0]!.n;
const seals = (db: Db) => count(db, 'audit_chain');
const rowsOf = async (db: Db) => (await count(db, 'events')) + (await count(db, 'audit_log'));

/** `n` events and an audit row every third, each in its own transaction, as the service writes them. */
async function write(db: Db, n: number, tag = 'w'): Promise<void> {
  for (let i = 0; i < n; i++) {
    await db.transaction(async (tx) => {
      await recordEvent(tx, { type: 'report.updated', actor: { kind: 'agent', chatId: '300000000000000001', name: 'Alice' }, correlationId: `${tag}-${i}`, reportId: `SVC-CASE-${String(i).padStart(5, '0')}`, before: { status: 'Open' }, after: { status: 'Pending', n: i } });
      if (i % 3 === 0) await recordAudit(tx, { actor: { kind: 'agent', chatId: '300000000000000002' }, action: 'admin.agent_updated', target: `t-${i}`, reason: `because ${i}`, after: { clearance_level: i % 5 }, correlationId: `${tag}-${i}` });
    });
  }
}

/**
 * Seals until nothing is pending. On a shared PostgreSQL server a write transaction of another
 * test file, in another database, holds the mark back until it ends (xids are server-wide).
 */
async function sealed(db: Db): Promise<Verification> {
  const deadline = Date.now() + 20_000;
  while ((await sealAvailable(db), await pendingRows(db)) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  const v = await verifyChain(db);
  expect(v, JSON.stringify(v.problem)).toMatchObject({ ok: true, problem: null, pending: 0 });
  return v;
}

/** The rows of the chain in order, as (table, id). */
const chainOrder = async (db: Db) => (await db.query<{ source: string; row_id: number }>('select source, row_id from audit_chain order by position')).rows.map((r) => `${r.source}#${r.row_id}`);

// One database for the two blocks below, in file order: the tampering cases clear it after each.
let d: TestDatabase;
let db: Db;
beforeAll(async () => {
  d = await createTestDatabase();
  db = d.db;
});
afterAll(() => d.drop());

describe(`the audit hash chain on ${storeName}`, () => {

  it('seals every row once, in (transaction, table, id) order, with the documented hashes', async () => {
    await write(db, 12);
    await sealed(db);
    expect(await seals(db)).toBe(await rowsOf(db));
    expect(await sealAvailable(db)).toMatchObject({ sealed: 0 });
    expect(await count(db, '(select source, row_id from audit_chain group by 1, 2 having count(*) > 1) d')).toBe(0);

    // The definition in src/platform/audit-chain/hashes.ts and forms.ts, recomputed here from the
    // rows and their salts alone: form 3, each personal field (personal-fields.ts) set to null in
    // the row and its commitment SHA-256("cms-audit-commitment-v3" || 0x00 || salt || value) put
    // under its JSON pointer in "personal".
    await db.transaction(async (tx) => {
      await tx.exec("set local timezone = 'UTC'");
      const { rows } = await tx.query<{ position: number; source: 'events' | 'audit_log'; form: number; row_hash: string; chain_hash: string; row: Record<string, unknown>; salts: Record<string, string> | null; tx: string; id: number }>(
        `select c.position, c.source, c.form, encode(c.row_hash, 'hex') as row_hash, encode(c.chain_hash, 'hex') as chain_hash, r.row, s.salts, r.tx, r.id
           from audit_chain c
           join (select 'events' as source, id, sealing_tx::text as tx, to_jsonb(e) - 'search_text' - 'sealing_tx' as row from events e
                 union all select 'audit_log', id, sealing_tx::text, to_jsonb(a) - 'sealing_tx' from audit_log a) r on r.source = c.source and r.id = c.row_id
           left join audit_seal_salts s on s.source = c.source and s.row_id = c.row_id
          order by c.position`,
      );
      let previous = GENESIS_HASH;
      for (const [i, r] of rows.entries()) {
        expect(r.position).toBe(i + 1);
        expect(r.form).toBe(3);
        const salts = r.salts ?? {};
        expect(Object.keys(salts).sort()).toEqual(personalLeaves(r.source, r.row).map((l) => l.pointer).sort());
        const committed = structuredClone(r.row);
        const personal: Record<string, string> = {};
        for (const [pointer, salt] of Object.entries(salts)) {
          expect(salt).toMatch(/^[0-9a-f]{32}$/);
          const path = pointer.slice(1).split('/');
          const parent = path.slice(0, -1).reduce<Record<string, unknown>>((node, k) => node[k] as Record<string, unknown>, committed);
          const value = parent[path.at(-1)!] as string;
          parent[path.at(-1)!] = null;
          personal[pointer] = createHash('sha256').update('cms-audit-commitment-v3\0').update(Buffer.from(salt, 'hex')).update(value, 'utf8').digest('hex');
        }
        const text = canonicalize({ source: r.source, form: 3, row: committed, personal })!;
        expect(r.row_hash).toBe(createHash('sha256').update(text).digest('hex'));
        expect(r.row).not.toHaveProperty('sealing_tx');
        const pos = Buffer.alloc(8);
        pos.writeBigUInt64BE(BigInt(r.position));
        previous = createHash('sha256').update(Buffer.from(previous, 'hex')).update(pos).update(Buffer.from(r.row_hash, 'hex')).digest('hex');
        expect(r.chain_hash).toBe(previous);
        if (i > 0) {
          const p = rows[i - 1]!;
          const order = BigInt(p.tx) < BigInt(r.tx) || (p.tx === r.tx && (p.source < r.source || (p.source === r.source && p.id < r.id)));
          expect(order, `position ${r.position}`).toBe(true);
        }
      }
      expect(await readHead(tx)).toEqual({ rows: rows.length, hash: previous });
    });
    const v = await verifyChain(db);
    expect(v).toMatchObject({ ok: true, rows: await rowsOf(db), head: (await readHead(db)).hash, problem: null, pending: 0 });
  });

  it('a row committed after a later id is sealed after it: the order is commit-safe, never by id alone', async () => {
    await sealed(db);
    // Transaction A takes an id, B takes a later one and commits first; the sealer must not seal
    // B and move past A while A is still open.
    let releaseA!: () => void;
    const aHolds = new Promise<void>((resolve) => (releaseA = resolve));
    let aInserted!: () => void;
    const aHasId = new Promise<void>((resolve) => (aInserted = resolve));
    if (db.kind === 'pglite') {
      // One connection: transactions cannot interleave; sealing between two commits is what is left to show.
      await write(db, 1, 'a');
      await sealAvailable(db);
      await write(db, 1, 'b');
      await sealed(db);
      return;
    }
    const a = db.transaction(async (tx) => {
      await recordEvent(tx, { type: 'report.updated', actor: { kind: 'system' }, correlationId: 'slow-a' });
      aInserted();
      await aHolds;
    });
    await aHasId;
    await write(db, 1, 'fast-b');
    const whileOpen = await sealAvailable(db);
    const order1 = await chainOrder(db);
    const idOf = async (c: string) => (await db.query<{ id: number }>('select id from events where correlation_id = $1::text', [c])).rows[0]?.id;
    expect(await idOf('slow-a')).toBeUndefined(); // not committed: invisible
    expect(order1).not.toContain(`events#${await idOf('fast-b-0')}`);
    expect(whileOpen.sealed).toBe(0);
    releaseA();
    await a;
    await sealed(db);
    const order2 = await chainOrder(db);
    const [ia, ib] = [await idOf('slow-a'), await idOf('fast-b-0')];
    expect(ia).toBeLessThan(ib!);
    expect(order2.indexOf(`events#${ia}`)).toBeLessThan(order2.indexOf(`events#${ib}`));
  });

  it('passes over sealed rows with one index probe each, never by hashing every seal, whatever the statistics say', async () => {
    await write(db, 30, 'plan');
    await sealed(db);
    // Statistics that make audit_chain look empty (as on a server whose autovacuum has not
    // analysed it since it grew): the plan that once hashed every seal of the table per batch.
    await db.exec('delete from pg_statistic where starelid = \'audit_chain\'::regclass');
    await db.exec('update pg_class set reltuples = 0, relpages = 0 where oid = \'audit_chain\'::regclass');
    for (const source of ['events', 'audit_log'] as const) {
      const { rows } = await db.query<{ 'QUERY PLAN': string }>(`explain ${candidatesSql(source).replace(/\$1::xid8/, "'0'::xid8").replace(/\$2::bigint/, '0::bigint').replace(/\$3::xid8/, "'18446744073709551615'::xid8").replace(/\$4::int/, '2000')}`);
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(plan).not.toMatch(/hashed/i);
      expect(plan).toMatch(/SubPlan/);
    }
    await db.exec('analyze audit_chain');
  });
});

describe(`verify-audit names what was tampered with through SQL, on ${storeName}`, () => {
  afterEach(async () => {
    // Each case starts from a chain of its own.
    await db.exec("delete from audit_chain; delete from audit_seal_salts; delete from events; delete from audit_log; update audit_chain_state set audit_log_tx = '0', audit_log_id = 0, events_tx = '0', events_id = 0");
  });

  /** 20 events and 7 audit rows sealed; the chain's rows in order. */
  async function chain(): Promise<{ order: string[]; head: string }> {
    await write(db, 20);
    const v = await sealed(db);
    return { order: await chainOrder(db), head: v.head };
  }
  const idAt = (order: string[], position: number) => Number(order[position - 1]!.split('#')[1]);

  it('an event whose data was changed', async () => {
    const { order } = await chain();
    const victim = order.findIndex((r) => r.startsWith('events#')) + 5 + 1;
    expect(order[victim - 1]).toMatch(/^events#/);
    await db.query(`update events set after = jsonb_set(after, '{status}', '"Validated"') where id = $1::bigint`, [idAt(order, victim)]);
    expect((await verifyChain(db)).problem).toEqual({ kind: 'edited', source: 'events', id: idAt(order, victim), position: victim });
    expect((await verifyChain(db)).ok).toBe(false);
  });

  it('an admin audit row whose reason was changed', async () => {
    const { order } = await chain();
    const victim = order.findIndex((r) => r.startsWith('audit_log#')) + 1;
    await db.query(`update audit_log set reason = 'nothing to see' where id = $1::bigint`, [idAt(order, victim)]);
    expect((await verifyChain(db)).problem).toEqual({ kind: 'edited', source: 'audit_log', id: idAt(order, victim), position: victim });
  });

  it('a row deleted in the middle', async () => {
    const { order } = await chain();
    const victim = 11;
    const [table] = order[victim - 1]!.split('#') as ['events' | 'audit_log'];
    await db.query(`delete from ${table} where id = $1::bigint`, [idAt(order, victim)]);
    expect((await verifyChain(db)).problem).toEqual({ kind: 'deleted', source: table, id: idAt(order, victim), position: victim });
  });

  it('a row deleted with its seal: the gap in the chain', async () => {
    const { order } = await chain();
    const [table] = order[8]!.split('#') as ['events' | 'audit_log'];
    await db.query(`delete from ${table} where id = $1::bigint`, [idAt(order, 9)]);
    await db.query('delete from audit_chain where position = 9');
    expect((await verifyChain(db)).problem).toEqual({ kind: 'seal_missing', position: 9 });
  });

  it('the last rows deleted with their seals: the chain alone verifies, the checkpoint catches it', async () => {
    const { order, head } = await chain();
    const total = order.length;
    for (const position of [total, total - 1, total - 2]) {
      const [table, id] = order[position - 1]!.split('#');
      await db.query(`delete from ${table} where id = $1::bigint`, [Number(id)]);
    }
    await db.query('delete from audit_chain where position > $1::bigint', [total - 3]);
    const alone = await verifyChain(db);
    expect(alone).toMatchObject({ ok: true, rows: total - 3 });
    const checked = await verifyChain(db, { against: head });
    expect(checked).toMatchObject({ ok: false, rows: total - 3, problem: { kind: 'checkpoint_not_found', against: head } });
    // An older checkpoint the shortened chain still extends passes, and says where it was.
    const { rows } = await db.query<{ h: string }>("select encode(chain_hash, 'hex') as h from audit_chain where position = 5");
    expect(await verifyChain(db, { against: rows[0]!.h.toUpperCase() })).toMatchObject({ ok: true, checkpointAt: 5 });
  });

  it('two rows swapped in the chain: the row holding the other\'s content is named', async () => {
    const { order } = await chain();
    // The seals of positions 6 and 7 made to name each other's rows.
    await db.exec(`update audit_chain set position = -6 where position = 6; update audit_chain set position = 6 where position = 7; update audit_chain set position = 7 where position = -6`);
    await db.exec(`update audit_chain c set row_hash = o.row_hash, chain_hash = o.chain_hash
      from (select position, row_hash, chain_hash from audit_chain where position in (6, 7)) o where c.position in (6, 7) and o.position <> c.position`);
    const [table, id] = order[6]!.split('#') as ['events' | 'audit_log', string];
    expect((await verifyChain(db)).problem).toEqual({ kind: 'reordered', source: table, id: Number(id), position: 6, sealedAt: 7 });
  });

  it('two events\' times swapped (the order readers see): the first is named', async () => {
    const { order } = await chain();
    const events = order.map((r, i) => ({ r, position: i + 1 })).filter(({ r }) => r.startsWith('events#'));
    // Two neighbours written at different instants (PGlite's clock has millisecond resolution, so
    // neighbours may share one, and swapping equal times would change nothing).
    const idOf = (e: { r: string }) => Number(e.r.split('#')[1]);
    const timeOf = new Map(
      (await db.query<{ id: string; created_at: string }>('select id::text, created_at from events')).rows.map((r) => [Number(r.id), r.created_at]),
    );
    const at = events.findIndex((e, i) => i >= 3 && events[i + 1] !== undefined && timeOf.get(idOf(e)) !== timeOf.get(idOf(events[i + 1]!)));
    const [x, y] = [events[at]!, events[at + 1]!];
    const [ix, iy] = [idOf(x), idOf(y)];
    await db.query(
      `update events e set created_at = o.created_at from (select id, created_at from events where id in ($1::bigint, $2::bigint)) o
        where e.id in ($1::bigint, $2::bigint) and o.id <> e.id`,
      [ix, iy],
    );
    const times = (await db.query<{ created_at: string }>('select created_at from events where id in ($1::bigint, $2::bigint) order by id', [ix, iy])).rows;
    expect(times[0]!.created_at > times[1]!.created_at).toBe(true);
    expect((await verifyChain(db)).problem).toEqual({ kind: 'edited', source: 'events', id: ix, position: x.position });
  });

  it('a forged row inserted among the sealed ones', async () => {
    const { order } = await chain();
    // Backdated: an id between two sealed rows and the transaction id of a sealed one.
    const gap = idAt(order, 4) + 1;
    const taken = await count(db, 'events where id = $1::bigint', [gap]);
    const forgedId = taken > 0 ? (await db.query<{ id: number }>('select max(id) + 1000 as id from events')).rows[0]!.id : gap;
    await db.query(
      `insert into events (id, type, actor_kind, correlation_id, created_at, sealing_tx)
       overriding system value values ($1::bigint, 'punishment.revoked', 'system', 'forged', (select created_at from events where id = $2::bigint), (select sealing_tx from events where id = $2::bigint))`,
      [forgedId, idAt(order, 4)],
    );
    expect((await verifyChain(db)).problem).toEqual({ kind: 'inserted', source: 'events', id: forgedId });
  });

  it('a seal whose hashes were rewritten for edited content: the next seal no longer follows', async () => {
    const { order } = await chain();
    const id = idAt(order, 3);
    const [table] = order[2]!.split('#') as ['events' | 'audit_log'];
    await db.query(`update ${table} set correlation_id = 'rewritten' where id = $1::bigint`, [id]);
    // The attacker recomputes the row's hash and its chain hash, but not every seal after it.
    const { rows } = await db.query<{ row: Record<string, unknown>; prev: string; salts: Record<string, string> | null }>(
      `select ${table === 'events' ? "to_jsonb(r) - 'search_text' - 'sealing_tx'" : "to_jsonb(r) - 'sealing_tx'"} as row,
              (select encode(chain_hash, 'hex') from audit_chain where position = 2) as prev,
              (select salts from audit_seal_salts s where s.source = $2::text and s.row_id = r.id) as salts from ${table} r where id = $1::bigint`,
      [id, table],
    );
    // Its seal is form 3: the salts are in the database, the forger can compute it.
    const rh = rowHashIn(3, table, rows[0]!.row, rows[0]!.salts ?? {}, {}).hash!;
    await db.query(`update audit_chain set row_hash = decode($1::text, 'hex'), chain_hash = decode($2::text, 'hex') where position = 3`, [rh, chainHash(rows[0]!.prev, 3, rh)]);
    expect((await verifyChain(db)).problem).toEqual({ kind: 'seal_altered', position: 4 });
  });

  it('rows written after the last pass are pending, not a failure, and sealed by the next pass', async () => {
    await chain();
    await write(db, 4, 'late');
    expect(await verifyChain(db)).toMatchObject({ ok: true, pending: 6 });
    await sealed(db);
  });

  it('a database restored on another server (transaction ids below the mark): the sealer rebases and goes on', async () => {
    await chain();
    const before = await seals(db);
    // As after pg_restore into a new cluster: the cursor and the last row's transaction id are the
    // old server's, far above this one's, and that row's seal had not been written yet.
    const last = (await db.query<{ source: string; row_id: number }>('select source, row_id from audit_chain order by position desc limit 1')).rows[0]!;
    await db.query(`update ${last.source} set sealing_tx = '899999999990' where id = $1::bigint`, [last.row_id]);
    await db.exec(`update audit_chain_state set ${last.source}_tx = '900000000000'; delete from audit_chain where position = (select max(position) from audit_chain)`);
    await write(db, 2, 'moved'); // 2 events and 1 audit row
    const v = await sealed(db);
    expect(v.rows).toBe(before + 3);
    const state = (await db.query<Record<string, string>>('select audit_log_tx::text as a, events_tx::text as e from audit_chain_state')).rows[0]!;
    expect(BigInt(state.a!)).toBeLessThan(900000000000n);
    expect(BigInt(state.e!)).toBeLessThan(900000000000n);
  });
});

describe('a sealer on a database that hangs', () => {
  it('does not hold the shutdown past its deadline, and says so', async () => {
    const warnings: string[] = [];
    const log = { ...silentLog, warn: (_: unknown, msg: string) => warnings.push(msg), error: () => undefined, info: () => undefined } as unknown as typeof silentLog;
    const hung = { kind: 'postgres', transaction: () => new Promise(() => undefined), query: () => new Promise(() => undefined) } as unknown as Db;
    const sealer = new AuditSealer('production', hung, log, 1_000);
    // On a fake clock: only the deadline can end the wait (the database never answers), not 5 s here.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    try {
      void sealer.pass();
      const started = Date.now();
      let stopped = false;
      const stopping = sealer.stop().then(() => void (stopped = true));
      await vi.advanceTimersByTimeAsync(STOP_DEADLINE_MS - 1);
      expect(stopped, 'still waiting just before the deadline').toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await stopping;
      expect(Date.now() - started).toBeGreaterThanOrEqual(STOP_DEADLINE_MS - 50);
      expect(Date.now() - started).toBeLessThan(STOP_DEADLINE_MS + 2_000);
    } finally {
      vi.useRealTimers();
    }
    expect(warnings).toEqual([`audit chain: the shutdown pass and checkpoint did not finish within ${STOP_DEADLINE_MS} ms; the next sealer seals what is left`]);
  }, 15_000);
});

describe(`the service seals on its own, on ${storeName}`, () => {
  let t: TestApp;
  const r = reportCrudHelpers(() => t);
  beforeAll(async () => {
    t = await createTestApp({ env: { AUDIT_SEAL_INTERVAL_SECONDS: '0.2' }, sealing: true });
  });
  afterAll(() => t.close());

  it('rows written through the API are sealed within seconds, and no answer shows the sealing', async () => {
    const id = await r.createOk();
    const patched = await r.patch(id, { status: 'Pending' });
    expect(patched.statusCode).toBe(200);
    expect(JSON.stringify(patched.json())).not.toMatch(/sealing|chain/);
    const audit = await t.app.inject({ url: `/audit?search=${id}`, headers: { authorization: PRODUCTION_KEY } });
    expect(audit.statusCode).toBe(200);
    expect(audit.json().events.length).toBeGreaterThan(0);
    for (const e of audit.json().events) expect(Object.keys(e).sort()).toEqual(['actor_chat_id', 'actor_kind', 'actor_name', 'after', 'before', 'correlation_id', 'created_at', 'data', 'id', 'is_supervisor', 'report_id', 'text', 'type']);

    const started = Date.now();
    const db = t.db.production;
    while ((await seals(db)) < (await rowsOf(db))) {
      expect(Date.now() - started, 'every row sealed within 5 s').toBeLessThan(5_000);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await verifyChain(db)).ok).toBe(true);
  });

  it('a demo reset starts the demo\'s chain again, and it verifies', async () => {
    const demo = t.db.demo;
    await sealAvailable(demo);
    expect(await seals(demo)).toBeGreaterThan(0);
    await demo.transaction((tx) => resetDemo(tx));
    expect(await seals(demo)).toBe(0);
    expect(await count(demo, 'audit_verifications')).toBe(0);
    const v = await sealed(demo);
    expect(v.rows).toBe(await rowsOf(demo));
    expect(v.rows).toBeGreaterThan(0);
  });

  it('GET /admin/health shows the chain: rows, head, delay, the latest verification', async () => {
    const director = await signedIn(t, { rank: 'Director', clearance: 5, allowlisted: true });
    await sealAvailable(t.db.production);
    const v = await verifyChain(t.db.production);
    const { recordVerification } = await import('../src/platform/audit-chain/verify.js');
    await recordVerification(t.db.production, v, undefined);
    const res = await t.app.inject({ url: '/admin/health', headers: director.headers });
    expect(res.statusCode).toBe(200);
    const audit = res.json().audit;
    const head = await readHead(t.db.production);
    expect(audit).toMatchObject({
      status: 'ok',
      chain_rows: head.rows,
      chain_head: head.hash,
      unsealed_rows: 0,
      sealing_delay_s: 0,
      last_verification: { ok: true, rows: v.rows, head_hash: v.head, problem: null, verified_at: expect.any(String) },
    });

    // A failed verification is an error in the section, with the problem named.
    await t.db.production.query(`insert into audit_verifications (ok, rows_verified, head_hash, problem, seconds) values (false, 3, null, 'events row 9 (position 4): its content does not match its seal (edited)', 0.1)`);
    const failed = (await t.app.inject({ url: '/admin/health', headers: director.headers })).json().audit;
    expect(failed.status).toBe('error');
    expect(failed.reasons.join(' ')).toContain('events row 9 (position 4)');
  });
});
