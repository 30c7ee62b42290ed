// The erasure property's mutation step (issue 39): one sealed row tampered with at random, as a
// writer with SQL access behind the service's back would, after which verify-audit, with and
// without a checkpoint taken before, must fail naming that row; then the row is put back, so the
// property's next case starts from a chain that verifies. Three kinds, chosen by fast-check:
//   - other:    a column no erasure may change (correlation_id) rewritten;
//   - personal: a personal field (one the seal holds a salt for) replaced by another value of any
//               JSON kind, its salt left or deleted;
//   - erased:   a personal field set to what an erasure leaves, its salt moved to an erased entry
//               with the right commitment, citing a real erasure that did not name it.
import fc from 'fast-check';
import { expect } from 'vitest';
import { commitment } from '../../src/platform/audit-chain/forms.js';
import { ERASURE_MARKER, isChatIdKey, parsePointer } from '../../src/platform/audit-chain/personal-fields.js';
import { readHead } from '../../src/platform/audit-chain/seal.js';
import { verifyChain } from '../../src/platform/audit-chain/verify.js';
import type { Db } from '../../src/platform/db/types.js';

export type Mutation =
  | { kind: 'other'; pick: number }
  | { kind: 'personal'; pick: number; value: unknown; dropSalt: boolean }
  | { kind: 'erased'; pick: number };

export const MUTATION: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('other' as const), pick: fc.nat() }),
  fc.record({
    kind: fc.constant('personal' as const), pick: fc.nat(), dropSalt: fc.boolean(),
    value: fc.oneof(fc.string(), fc.constant(null), fc.integer(), fc.constant(ERASURE_MARKER), fc.constant({ commitment: 'c' }), fc.constant(['x'])),
  }),
  fc.record({ kind: fc.constant('erased' as const), pick: fc.nat() }),
);

interface Target {
  source: 'events' | 'audit_log';
  id: number;
  salts: Record<string, string>;
}

/** Tampers one sealed row as `m` says, checks verify-audit names it, and puts everything back. */
export async function tamperedRowIsNamed(db: Db, m: Mutation): Promise<void> {
  const head = await readHead(db);
  const { rows: targets } = await db.query<Target>(
    `select c.source, c.row_id::int as id, coalesce(s.salts, '{}'::jsonb) as salts from audit_chain c
       left join audit_seal_salts s on s.source = c.source and s.row_id = c.row_id
      where c.form = 3 ${m.kind === 'other' ? '' : "and s.salts <> '{}'::jsonb"} order by c.position`,
  );
  expect(targets.length).toBeGreaterThan(0);
  const target = targets[m.pick % targets.length]!;
  const { source, id } = target;
  const [saved] = (await db.query<Record<string, unknown>>(`select to_jsonb(r) as row, (select to_jsonb(s) from audit_seal_salts s where s.source = $2::text and s.row_id = r.id) as salts from ${source} r where id = $1::bigint`, [id, source])).rows;

  if (m.kind === 'other') {
    await db.query(`update ${source} set correlation_id = correlation_id || '-tampered' where id = $1::bigint`, [id]);
  } else {
    const pointers = Object.keys(target.salts).sort();
    const pointer = pointers[m.pick % pointers.length]!;
    const [column, ...path] = parsePointer(pointer);
    const old = (path.reduce<unknown>((node, k) => (node as Record<string, unknown>)[k], (saved!.row as Record<string, unknown>)[column!])) as string;
    const key = [column!, ...path].reverse().find((k) => !/^\d+$/.test(k))!;
    let value: unknown = m.kind === 'erased' ? (isChatIdKey(key) ? '0' + '7'.repeat(19) : ERASURE_MARKER) : m.value;
    if (JSON.stringify(value) === JSON.stringify(old)) value = `${old}!`;
    if (path.length === 0) await db.query(`update ${source} set ${column} = $2::text where id = $1::bigint`, [id, value === null ? null : typeof value === 'string' ? value : JSON.stringify(value)]);
    else await db.query(`update ${source} set ${column} = jsonb_set(${column}, $2::text[], $3::jsonb) where id = $1::bigint`, [id, path, JSON.stringify(value)]);
    if (m.kind === 'erased') {
      const { rows: erasure } = await db.query<{ id: string; reference: string }>('select id::text, reference from subject_erasures order by id desc limit 1');
      const entry = { commitment: commitment(3, target.salts[pointer]!, old), erasure: erasure[0]!.id, reference: erasure[0]!.reference, value };
      await db.query(`update audit_seal_salts set salts = salts - $3::text, erased = erased || jsonb_build_object($3::text, $4::jsonb) where source = $1::text and row_id = $2::bigint`, [source, id, pointer, JSON.stringify(entry)]);
    } else if (m.dropSalt) {
      await db.query('update audit_seal_salts set salts = salts - $3::text where source = $1::text and row_id = $2::bigint', [source, id, pointer]);
    }
  }

  for (const v of [await verifyChain(db), await verifyChain(db, { against: head.hash })]) {
    expect(v.ok, `${JSON.stringify(m)} on ${source} row ${id}: ${JSON.stringify(v.problem)}`).toBe(false);
    expect(v.problem).toMatchObject({ kind: 'edited', source, id });
  }
  await restore(db, source, id, saved!.row as Record<string, unknown>, saved!.salts as { salts: unknown; erased: unknown } | null);
  expect((await verifyChain(db, { against: head.hash })).ok).toBe(true);
}

/** The row's columns as they were (the generated ones excepted) and its salts row. */
async function restore(db: Db, source: string, id: number, row: Record<string, unknown>, salts: { salts: unknown; erased: unknown } | null): Promise<void> {
  await db.query(
    `update ${source} r set correlation_id = x.correlation_id, ${source === 'events' ? 'actor_chat_id = x.actor_chat_id, actor_name = x.actor_name, before = x.before, after = x.after, data = x.data' : 'actor_chat_id = x.actor_chat_id, target = x.target, reason = x.reason, before = x.before, after = x.after'}
       from jsonb_populate_record(null::${source}, $2::jsonb) x where r.id = $1::bigint`,
    [id, JSON.stringify(row)],
  );
  if (salts) await db.query('update audit_seal_salts set salts = $3::jsonb, erased = $4::jsonb where source = $1::text and row_id = $2::bigint', [source, id, JSON.stringify(salts.salts), JSON.stringify(salts.erased)]);
}
