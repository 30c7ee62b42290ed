// Shared by the audit erasure tests (issue 32): a person planted in sealed events and admin audit
// rows, sealed in form 3 by the sealer or in form 1 as the release before did, erased through
// eraseSealedRows as subject erasure calls it (with the erasure's record naming the fields), and
// what a forger with SQL access can do.
import { expect } from 'vitest';
import { SEAL_FORM, sealIn } from '../../src/platform/audit-chain/forms.js';
import { eraseSealedRows, loadSealedRows, personalPointers, type RowErasure } from '../../src/platform/audit-chain/erase.js';
import { chainHash, rowHash, type SealedTable } from '../../src/platform/audit-chain/hashes.js';
import { pseudonym, pseudonymKey } from '../../src/platform/audit-chain/personal-fields.js';
import { readHead, sealAvailable } from '../../src/platform/audit-chain/seal.js';
import { pendingRows, verifyChain, type Verification } from '../../src/platform/audit-chain/verify.js';
import { recordAudit } from '../../src/platform/audit.js';
import type { Db } from '../../src/platform/db/types.js';
import { recordEvent } from '../../src/platform/events.js';

export const PERSON = '412345678901234567';
export const OTHER = '498765432109876543';
export const AGENT = '300000000000000001';
export const PSEUDONYM = pseudonym(pseudonymKey('a test secret'), PERSON);
export const ERASURE = { id: 'ER-1', reference: 'GDPR-2026-001' };
const names = (value: string) => value === PERSON || value.includes('Pat');

/** Each case starts from an empty chain of its own. */
export const CLEAR_CHAIN = "delete from audit_chain; delete from audit_seal_salts; delete from events; delete from audit_log; update audit_chain_state set audit_log_tx = '0', audit_log_id = 0, events_tx = '0', events_id = 0, form1_position = 0";

/** The helpers, on the database `current()` returns when called. */
export function erasureFixture(current: () => Db) {
  /** Per case: a report naming the person (event), a status change (event), an admin audit row about them. */
  async function plant(n = 3): Promise<void> {
    for (let i = 0; i < n; i++) {
      await current().transaction(async (tx) => {
        const actor = { kind: 'agent' as const, chatId: AGENT, name: 'Alice Agent' };
        await recordEvent(tx, {
          type: 'report.created', actor, correlationId: `c-${i}`, reportId: `R-${i}`,
          after: { report_id: `R-${i}`, reporter: PERSON, reported: OTHER, reporter_name: 'Pat Person', reported_name: 'Olive Other', reason: 'Pat says hello', status: 'Open', notes_list: [{ note: 'Pat called', author_chat_id: AGENT }] },
        });
        await recordEvent(tx, { type: 'report.status_changed', actor, correlationId: `c-${i}`, reportId: `R-${i}`, before: { status: 'Open' }, after: { status: 'Pending' }, data: { action: 'claim' } });
        await recordAudit(tx, { actor, action: 'admin.agent_updated', target: PERSON, reason: `Pat asked ${i}`, after: { name: 'Pat Person', clearance_level: 2 }, correlationId: `c-${i}` });
      });
    }
  }

  async function sealed(): Promise<Verification> {
    const deadline = Date.now() + 20_000;
    while ((await sealAvailable(current()), await pendingRows(current())) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    const v = await verifyChain(current());
    expect(v, JSON.stringify(v.problem)).toMatchObject({ ok: true, problem: null, pending: 0 });
    return v;
  }

  /**
   * Seals what is not sealed as a release before did: form 1 (issue 21's, inserted without a
   * form) or form 2 (issue 32's, its salts beside it).
   */
  async function sealInForm(form: 1 | 2): Promise<void> {
    await current().transaction(async (tx) => {
      await tx.exec("set local timezone = 'UTC'");
      const { rows } = await tx.query<{ source: SealedTable; id: number; row: Record<string, unknown> }>(
        `select source, id, row from (
           select 'events' as source, id, sealing_tx, to_jsonb(r) - 'search_text' - 'sealing_tx' as row from events r
           union all select 'audit_log', id, sealing_tx, to_jsonb(r) - 'sealing_tx' from audit_log r) x
          where not exists (select 1 from audit_chain c where c.source = x.source and c.row_id = x.id) order by sealing_tx, source, id`,
      );
      let { rows: position, hash } = await readHead(tx);
      for (const r of rows) {
        const { rh, salts } = form === 1 ? { rh: rowHash(r.source, r.row), salts: undefined } : sealIn(2, r.source, r.row);
        hash = chainHash(hash, ++position, rh);
        await tx.query(`insert into audit_chain (position, source, row_id, row_hash, chain_hash${form === 1 ? '' : ', form'}) values ($1::bigint, $2::text, $3::bigint, decode($4::text, 'hex'), decode($5::text, 'hex')${form === 1 ? '' : ', 2'})`, [position, r.source, r.id, rh, hash]);
        if (salts !== undefined) await tx.query('insert into audit_seal_salts (source, row_id, salts) values ($1::text, $2::bigint, $3::jsonb)', [r.source, r.id, JSON.stringify(salts)]);
      }
      for (const t of ['events', 'audit_log']) {
        await tx.exec(`update audit_chain_state set ${t}_tx = coalesce((select sealing_tx from ${t} order by sealing_tx desc, id desc limit 1), '0'), ${t}_id = coalesce((select max(id) from ${t}), 0)`);
      }
    });
  }
  const sealInForm1 = () => sealInForm(1);

  /**
   * The erasure of PERSON from every sealed row, as subject erasure calls it, and its record:
   * naming the fields, or (`legacy`) as releases before 0031 wrote it, without them.
   */
  async function erasePerson({ legacy = false } = {}): Promise<{ events: number; audit_log: number }> {
    return current().transaction(async (tx) => {
      const requests: RowErasure[] = [];
      for (const source of ['events', 'audit_log'] as const) {
        const ids = (await tx.query<{ id: number }>(`select id from ${source} order by id`)).rows.map((r) => Number(r.id));
        for (const [id, row] of await loadSealedRows(tx, source, ids)) {
          const pointers = personalPointers(source, row, (_key, value) => names(value));
          if (pointers.length > 0) requests.push({ source, id, pointers, chatIdPseudonym: PSEUDONYM });
        }
      }
      const { events, audit_log, fields } = await eraseSealedRows(tx, ERASURE, requests);
      // The record subject erasure writes (src/admin/subjects/erase.ts): verify-audit finds the fields there.
      if (fields.length > 0) {
        await recordAudit(tx, { actor: { kind: 'operator' }, action: 'admin.subject_erased', target: PSEUDONYM, reason: 'Asked by email', after: { erasure_id: ERASURE.id, reference: ERASURE.reference, ...(legacy ? {} : { fields }) }, correlationId: 'erasure' });
      }
      return { events, audit_log };
    });
  }

  const eventOf = async (type: string, n = 0) => (await current().query<{ id: number }>('select id from events where type = $1::text order by id limit 1 offset $2::int', [type, n])).rows[0]!.id;
  /** The position of a row's seal in `form`; without it, of its latest seal (the one in a form with commitments, once it has one). */
  const positionOf = async (source: string, id: number, form?: number) =>
    (await current().query<{ position: number }>(
      'select position from audit_chain where source = $1::text and row_id = $2::bigint and ($3::int is null or form = $3::int) order by form desc limit 1',
      [source, id, form ?? null],
    )).rows[0]!.position;
  const everything = async () => (await current().query<{ t: string }>("select coalesce(string_agg(to_jsonb(e)::text, ' '), '') || ' ' || (select coalesce(string_agg(to_jsonb(a)::text, ' '), '') from audit_log a) as t from events e")).rows[0]!.t;
  /** verify-audit names the row as edited (its field; with `erasure`, marked erased by an erasure whose record does not name it). */
  const edited = async (source: SealedTable, id: number, field?: string, erasure?: string) =>
    expect((await verifyChain(current())).problem).toEqual({
      kind: 'edited', source, id, position: await positionOf(source, id), ...(field === undefined ? {} : { field }), ...(erasure === undefined ? {} : { erasure }),
    });

  /** What a forger with SQL access can append: a form-3 seal of a row as it is now, at the head. */
  async function forgeReseal(source: SealedTable, id: number): Promise<void> {
    await current().transaction(async (tx) => {
      await tx.exec("set local timezone = 'UTC'");
      const row = (await loadSealedRows(tx, source, [id])).get(id)!;
      const { rh, salts } = sealIn(SEAL_FORM, source, row);
      const head = await readHead(tx);
      await tx.query(
        `insert into audit_chain (position, source, row_id, row_hash, chain_hash, form) values ($1::bigint, $2::text, $3::bigint, decode($4::text, 'hex'), decode($5::text, 'hex'), 3)`,
        [head.rows + 1, source, id, rh, chainHash(head.hash, head.rows + 1, rh)],
      );
      await tx.query('insert into audit_seal_salts (source, row_id, salts) values ($1::text, $2::bigint, $3::jsonb)', [source, id, JSON.stringify(salts)]);
    });
  }

  return { plant, sealed, sealInForm1, sealInForm, erasePerson, eventOf, positionOf, everything, edited, forgeReseal };
}
