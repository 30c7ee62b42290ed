// The Db contract, identical on PGlite and PostgreSQL: value shapes, counts, error codes,
// transactions (commit, rollback, savepoints) and the guard against the outer handle inside one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres, Turns } from '../../src/platform/db/postgres.js';
import { DbError, type Db } from '../../src/platform/db/types.js';
import { recordEvent } from '../../src/platform/events.js';
import { createTestDatabase, onPostgres, storeName, type TestDatabase } from '../helpers/stores.js';

let t: TestDatabase;
let db: Db;
beforeAll(async () => {
  t = await createTestDatabase();
  db = t.db;
  await db.exec(`
    create table things (id bigint generated always as identity primary key, name text unique, doc jsonb, at timestamptz default now(), n int8, day date);
    create table others (id int primary key);`);
});
afterAll(() => t.drop());

describe(`Db on ${storeName}`, () => {
  it('reports its store', () => {
    expect(db.kind).toBe(storeName);
  });

  it('returns int8 as numbers, timestamptz as ISO strings, dates as text, jsonb as values', async () => {
    const { rows, rowCount } = await db.query(
      `insert into things (name, doc, at, n, day) values ($1::text, $2::jsonb, $3::timestamptz, $4::int8, $5::date)
       returning id, name, doc, at, n, day`,
      ['a', JSON.stringify({ list: [1, 'two'], nested: { ok: true } }), '2026-11-21T11:04:39.123+01:00', 42, '2026-02-28'],
    );
    expect(rowCount).toBe(1);
    expect(rows).toEqual([
      { id: 1, name: 'a', doc: { list: [1, 'two'], nested: { ok: true } }, at: '2026-11-21T10:04:39.123Z', n: 42, day: '2026-02-28' },
    ]);
    expect((await db.query(`select count(*) as total from things`)).rows).toEqual([{ total: 1 }]);
  });

  it('passes jsonb arrays and strings given as JSON text, and arrays as SQL arrays', async () => {
    await db.query(`insert into things (name, doc) values ('b', $1::jsonb), ('c', $2::jsonb)`, [JSON.stringify([1, 2]), JSON.stringify('text')]);
    const { rows } = await db.query(`select name, doc from things where name = any($1::text[]) order by name`, [['b', 'c']]);
    expect(rows).toEqual([
      { name: 'b', doc: [1, 2] },
      { name: 'c', doc: 'text' },
    ]);
  });

  it('keeps int8 values past 2^53 exact, as text', async () => {
    const { rows } = await db.query(`select 9007199254740993::int8 as big, 9007199254740991::int8 as safe`);
    expect(rows).toEqual([{ big: '9007199254740993', safe: 9007199254740991 }]);
  });

  it('counts rows the same way for select, update, delete and no-ops', async () => {
    expect((await db.query(`select name from things`)).rowCount).toBe(3);
    expect((await db.query(`update things set n = 1 where name in ('b', 'c')`)).rowCount).toBe(2);
    expect((await db.query(`update things set n = 1 where false`)).rowCount).toBe(0);
    expect((await db.query(`delete from things where name = 'c'`)).rowCount).toBe(1);
  });

  it('raises one DbError shape with the SQLSTATE, detail and constraint', async () => {
    const err = await db.query(`insert into things (name) values ('a')`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DbError);
    expect(err).toMatchObject({
      code: '23505',
      constraint: 'things_name_key',
      detail: 'Key (name)=(a) already exists.',
      message: 'duplicate key value violates unique constraint "things_name_key"',
    });
    const bad = await db.query(`select $1::int`, ['x']).catch((e: unknown) => e);
    expect(bad).toMatchObject({ code: '22P02' });
    // The connection keeps working after a failed parameterised statement.
    expect((await db.query(`select $1::int as v`, [7])).rows).toEqual([{ v: 7 }]);
  });
});

describe('transactions', () => {
  it('commit everything when the callback resolves', async () => {
    const result = await db.transaction(async (tx) => {
      await tx.query(`insert into others values (1)`);
      await tx.query(`insert into others values (2)`);
      return 'done';
    });
    expect(result).toBe('done');
    expect((await db.query(`select id from others order by id`)).rows).toEqual([{ id: 1 }, { id: 2 }]);
  });

  it('roll back everything when the callback throws', async () => {
    const err = await db
      .transaction(async (tx) => {
        await tx.query(`insert into others values (3)`);
        await tx.query(`insert into others values (1)`); // duplicate
      })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: '23505' });
    expect((await db.query(`select id from others order by id`)).rows).toEqual([{ id: 1 }, { id: 2 }]);
  });

  it('nest on savepoints: an inner failure rolls back alone', async () => {
    await db.transaction(async (tx) => {
      await tx.query(`insert into others values (10)`);
      await tx.transaction(async (inner) => inner.query(`insert into others values (11)`));
      await tx
        .transaction(async (inner) => {
          await inner.query(`insert into others values (12)`);
          throw new Error('inner failure');
        })
        .catch(() => undefined);
    });
    expect((await db.query(`select id from others where id >= 10 order by id`)).rows).toEqual([{ id: 10 }, { id: 11 }]);
  });

  // PGlite only: there the call would hang the instance for good; PostgreSQL just runs it on
  // another connection, and the shared code is held to the PGlite rule by this suite's PGlite run.
  it.runIf(!onPostgres)('calling the outer handle inside a transaction fails at once instead of hanging', async () => {
    const outcome = await Promise.race([
      db
        .transaction(async (tx) => {
          await tx.query(`insert into others values (20)`);
          await db.query(`select 1`);
        })
        .then(() => 'resolved', (e: Error) => e.message),
      new Promise((resolve) => setTimeout(() => resolve('hung'), 5000)),
    ]);
    expect(outcome).toBe('db.query called inside db.transaction: use the tx handle passed to the callback');
    expect((await db.query(`select id from others where id = 20`)).rows).toEqual([]);
  });

  it('a transaction handle used after its transaction ended refuses', async () => {
    let leaked: { query(text: string): Promise<unknown> } | undefined;
    await db.transaction(async (tx) => {
      leaked = tx;
    });
    await expect(leaked!.query(`select 1`)).rejects.toThrow('transaction already finished');
  });

  it('concurrent work outside the transaction waits for it rather than failing', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const tx = db.transaction(async (t) => {
      await t.query(`insert into others values (30)`);
      await gate;
    });
    const outside = db.query(`select count(*)::int as n from others`);
    release();
    await tx;
    expect((await outside).rows[0]).toHaveProperty('n');
  });
});

describe('recordEvent', () => {
  it('writes the event inside the caller transaction', async () => {
    const event = await db.transaction((tx) =>
      recordEvent(tx, {
        type: 'report.status_changed',
        actor: { kind: 'agent', chatId: '123456789012345678', name: 'Ada' },
        correlationId: 'req-1',
        reportId: 'SVC-CASE-00001',
        before: { status: 'Open' },
        after: { status: 'Pending' },
        isSupervisor: true,
      }),
    );
    expect(event).toMatchObject({
      type: 'report.status_changed',
      actor_kind: 'agent',
      actor_chat_id: '123456789012345678',
      actor_name: 'Ada',
      report_id: 'SVC-CASE-00001',
      before: { status: 'Open' },
      after: { status: 'Pending' },
      data: null,
      correlation_id: 'req-1',
      is_supervisor: true,
    });
    expect(event.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const { rows } = await db.query(`select id, type from events where correlation_id = 'req-1'`);
    expect(rows).toEqual([{ id: event.id, type: 'report.status_changed' }]);
  });

  it('disappears with the transaction when the change fails', async () => {
    await db
      .transaction(async (tx) => {
        await recordEvent(tx, { type: 'queue.action_failed', actor: { kind: 'bot' }, correlationId: 'req-2' });
        throw new Error('the change failed');
      })
      .catch(() => undefined);
    expect((await db.query(`select id from events where correlation_id = 'req-2'`)).rows).toEqual([]);
  });

  it('records bot and system actors without a chat id', async () => {
    const [bot, system] = await db.transaction(async (tx) => [
      await recordEvent(tx, { type: 'queue.action_completed', actor: { kind: 'bot' }, correlationId: 'req-3' }),
      await recordEvent(tx, { type: 'admin.queue_swept', actor: { kind: 'system' }, correlationId: 'req-3', data: { swept: 2 } }),
    ]);
    expect(bot).toMatchObject({ actor_kind: 'bot', actor_chat_id: null, is_supervisor: false });
    expect(system).toMatchObject({ actor_kind: 'system', actor_chat_id: null, data: { swept: 2 } });
  });
});

describe('Turns at the pool', () => {
  it('gives a freed connection to a waiting transaction before reads that waited longer', async () => {
    const turns = new Turns(2);
    expect([turns.take(false), turns.take(false)]).toEqual([undefined, undefined]);
    const order: string[] = [];
    const wait = (label: string, change: boolean) => turns.take(change)!.then(() => order.push(label));
    const all = Promise.all([wait('read 1', false), wait('read 2', false), wait('change 1', true), wait('change 2', true)]);
    expect(turns.waiting).toEqual({ changes: 2, reads: 2 });
    for (let i = 0; i < 4; i++) turns.give();
    await all;
    expect(order).toEqual(['change 1', 'change 2', 'read 1', 'read 2']);
    // Everything given back: both turns free again, taken without waiting.
    turns.give();
    turns.give();
    expect([turns.take(false), turns.take(true), turns.waiting]).toEqual([undefined, undefined, { changes: 0, reads: 0 }]);
  });

  it.runIf(onPostgres)('on PostgreSQL: a transaction queued behind busy connections runs before the reads queued earlier', async () => {
    const db = openPostgres({ connectionString: t.url!, max: 2 });
    try {
      const finished: string[] = [];
      const read = (label: string, seconds: number) => db.query('select pg_sleep($1::float8)', [seconds]).then(() => finished.push(label));
      const busy = [read('busy 1', 0.3), read('busy 2', 0.6)];
      const queued = [read('read 1', 0.2), read('read 2', 0.2)];
      await new Promise((resolve) => setTimeout(resolve, 50));
      const change = db.transaction((tx) => tx.query('select 1')).then(() => finished.push('change'));
      await Promise.all([...busy, ...queued, change]);
      // The change took the first connection freed (at 0.3 s); first come, first served would have
      // given it to read 1 and left the change waiting until 0.5 s.
      expect(finished).toEqual(['busy 1', 'change', 'read 1', 'busy 2', 'read 2']);
    } finally {
      await db.close();
    }
  });
});
