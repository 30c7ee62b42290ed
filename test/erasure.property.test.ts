// Issue 39: an erasure succeeds on whatever the service itself wrote, and leaves nothing of the
// person. Random sequences of route calls put one person in the places the routes allow (reporter,
// reported, both; chat profiles with extra fields; evidence URLs; staff notes quoting them; contact
// both ways; punishments issued, expiring, revoked, with their deliveries; deleted reports),
// interleaved with other people's reports. Then the erasure succeeds, or answers its documented
// 409 PUNISHMENT_IN_FORCE and succeeds once the punishment is lifted; afterwards no text or json
// column of any table (from the catalog) holds their chat id, names or words, other people's
// reports are as they were, the audit chain verifies, and a second erasure after they appear again
// succeeds too. Then one sealed row is tampered with at random (a non-personal field, a personal
// value replaced by anything, a field marked erased without a record naming it): verify-audit,
// also against the head before, fails naming that row (helpers/chain-tampering.ts). The seed is
// printed (ERASURE_PROPERTY_SEED replays it).
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin } from './helpers/admin.js';
import { createTestApp, queueNotificationsDelivered, type TestApp } from './helpers/app.js';
import { MUTATION, tamperedRowIsNamed, type Mutation } from './helpers/chain-tampering.js';
import { sealedAndVerified, traces } from './helpers/erasure-checks.js';
import { chatId, signedIn, type Person } from './helpers/identity.js';
import { key } from './helpers/reports.js';
import { runs, seedOf } from './helpers/runs.js';
import { storeName } from './helpers/stores.js';

type Step =
  | { kind: 'file'; role: 'reporter' | 'reported' | 'both'; url: boolean; quote: boolean }
  | { kind: 'profiles'; extra: boolean }
  | { kind: 'note'; quote: boolean }
  | { kind: 'contact' }
  | { kind: 'punish'; soon: boolean }
  | { kind: 'revoke' }
  | { kind: 'delete' }
  | { kind: 'others' };

const STEP: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('file' as const), role: fc.constantFrom('reporter' as const, 'reported' as const, 'both' as const), url: fc.boolean(), quote: fc.boolean() }),
  fc.record({ kind: fc.constant('profiles' as const), extra: fc.boolean() }),
  fc.record({ kind: fc.constant('note' as const), quote: fc.boolean() }),
  fc.constant({ kind: 'contact' as const }),
  fc.record({ kind: fc.constant('punish' as const), soon: fc.boolean() }),
  fc.constant({ kind: 'revoke' as const }),
  fc.constant({ kind: 'delete' as const }),
  fc.constant({ kind: 'others' as const }),
);

let t: TestApp;
let staff: Person;
let manager: Person;
let director: Person;
let serial = 0;

beforeAll(async () => {
  t = await createTestApp();
  staff = await signedIn(t, { rank: 'Supervisor', clearance: 3, name: 'Tove Staffer' });
  manager = await signedIn(t, { rank: 'Agent', clearance: 4, name: 'Mona Manager' });
  director = await admin(t);
}, 60_000);
afterAll(() => t?.close());

/**
 * Whether this case's callers send an Idempotency-Key with every change, as the README's bot does:
 * the answers kept for retries (issue 41) are then among what the erasure must leave nothing of.
 */
let keyed = false;
const CLAIMS = new Set(['/discipline/next', '/actions/next']);

async function call(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Record<string, string>, payload?: object) {
  const withKey = keyed && (method !== 'GET' || CLAIMS.has(url)) ? { ...headers, 'idempotency-key': randomUUID() } : headers;
  const res = await t.app.inject({ method, url, headers: withKey, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.body === '' ? undefined : res.json() };
}
async function must(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Record<string, string>, payload?: object) {
  const res = await call(method, url, headers, payload);
  expect(res.status, `${method} ${url}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
  return res.body;
}

/** The bot works its discipline queue empty: punishments delivered, lifts delivered, lookups found nothing. */
async function drain() {
  for (let i = 0; i < 50; i++) {
    await queueNotificationsDelivered(t);
    const next = await call('GET', '/discipline/next', key);
    const item = next.body?.item;
    if (next.status !== 200 || !item) return;
    await must('POST', `/discipline/${item.item_id}/complete`, key, item.kind === 'user_lookup' ? { result: 'failed', note: 'no such user' } : { result: 'success' });
  }
}

/** One run: a person, what the steps put them in, and the other people's reports. */
class Run {
  readonly person = chatId();
  readonly token = `q${(++serial).toString(36)}x${Math.random().toString(36).slice(2, 7)}`;
  /** Their names and words, every one of which must be gone after the erasure. */
  readonly secrets = new Set<string>();
  /** `erased`: an erasure since replaced their chat id in it with their pseudonym. */
  readonly reports: { id: string; investigating: boolean; contacted: boolean; reporterIsPerson: boolean; erased: boolean }[] = [];
  /** Reports between other people only: as they were after the erasure. */
  readonly others = new Map<string, Record<string, unknown>>();
  readonly punishments: string[] = [];

  secret(kind: string): string {
    const s = `${kind}${this.token}`;
    this.secrets.add(s);
    return s;
  }

  async file(step: Extract<Step, { kind: 'file' }>) {
    const id = `ER-${this.token}-${this.reports.length + 1}`;
    const other = chatId();
    const mine = step.role !== 'reported';
    const name = this.secret('Name');
    const payload: Record<string, unknown> = {
      report_id: id,
      reporter: mine ? this.person : other,
      reported: step.role === 'reporter' ? other : this.person,
      reporter_name: mine ? name : 'Olga Other',
      reported_name: step.role === 'reporter' ? 'Otto Other' : name,
      // A reporter's words are theirs; another reporter may quote the person's name.
      reason: mine ? `${this.secret('Word')} in voice` : `Insults${step.quote ? ` from ${name}` : ''} in voice`,
      notes: 'n',
      evidence: mine ? this.secret('Clip') : 'clip',
      ...(step.url ? { evidence_url: mine ? `https://clips.example/${this.secret('Url')}.mp4` : 'https://clips.example/other.mp4' } : {}),
    };
    await must('POST', '/reports/create', key, payload);
    this.reports.push({ id, investigating: false, contacted: false, reporterIsPerson: mine, erased: false });
  }

  latest() {
    return this.reports.at(-1);
  }

  async profiles(extra: boolean) {
    const report = this.latest();
    if (!report) return;
    const profile = { chat_id: this.person, username: this.secret('user'), ...(extra ? { bio: `Likes ${this.secret('Bio')}`, id: this.secret('ext') } : {}) };
    const url = `/reports/${report.id}/chat-profiles`;
    const payload = report.reporterIsPerson ? { reporter: profile } : { reported: profile };
    if (!report.erased) return void (await must('POST', url, key, payload));
    // The report names their pseudonym now, not their chat id: a profile the bot still sends for
    // them there is refused (and checkGone finds it if anything of it was stored).
    const res = await call('POST', url, key, payload);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body).toMatchObject({ success: false, code: 'VALIDATION_ERROR' });
  }

  async investigating() {
    const report = this.latest();
    if (!report) return undefined;
    if (!report.investigating) {
      await must('PATCH', `/reports/${report.id}/update`, key, { assigned_agent: staff.agent.chat_id });
      await must('POST', `/reports/${report.id}/investigation/begin`, staff.headers);
      report.investigating = true;
    }
    return report;
  }

  async note(quote: boolean) {
    const report = await this.investigating();
    if (!report) return;
    const name = [...this.secrets].find((s) => s.startsWith('Name'));
    await must('POST', `/reports/${report.id}/notes`, staff.headers, { note: `Checked the logs${quote && name ? `; ${name} was warned` : ''}.` });
  }

  async contact() {
    const report = await this.investigating();
    if (!report || report.contacted) return;
    await must('POST', `/reports/${report.id}/action`, staff.headers, { action: 'contact_reporter', reason: 'Can you tell us more?' });
    report.contacted = true;
    // The reporter answers through the bot: the person's words when they reported.
    const body = report.reporterIsPerson ? `More: ${this.secret('Reply')}` : 'More from the other reporter';
    await must('POST', `/reports/${report.id}/contact/respond`, key, { body, sender_name: report.reporterIsPerson ? [...this.secrets].find((s) => s.startsWith('Name')) ?? 'Reporter' : 'Olga Other' });
  }

  async punish(soon: boolean) {
    const body = { user_id: this.person, reason: 'Harassment', ...(soon ? { expires_at: new Date(Date.now() + 300).toISOString() } : { duration: '7d' }) };
    const issued = await must('POST', '/punishments', manager.headers, body);
    this.punishments.push(issued.punishment.punishment_id);
    await drain();
  }

  async revoke() {
    const id = this.punishments.at(-1);
    if (!id) return;
    // Refused when it already ended (revoked, or expired): what the dashboard would be told too.
    await call('POST', `/punishments/${id}/revoke`, manager.headers, { reason: 'Appeal granted' });
    await drain();
  }

  async remove() {
    const report = this.reports.pop();
    if (report) await must('DELETE', `/reports/${report.id}`, key, { reason: 'Filed twice' });
  }

  async othersReport() {
    const id = `EO-${this.token}-${this.others.size + 1}`;
    await must('POST', '/reports/create', key, { report_id: id, reporter: chatId(), reported: chatId(), reason: `Spam ${id}`, notes: 'n', evidence: 'e', reporter_name: 'Olga Other' });
    this.others.set(id, await this.reportRow(id));
  }

  async reportRow(id: string) {
    return (await t.db.production.query<Record<string, unknown>>('select reporter, reported, reporter_name, reason, evidence from reports where report_id = $1::text', [id])).rows[0]!;
  }

  async apply(step: Step) {
    if (step.kind === 'file') await this.file(step);
    else if (step.kind === 'profiles') await this.profiles(step.extra);
    else if (step.kind === 'note') await this.note(step.quote);
    else if (step.kind === 'contact') await this.contact();
    else if (step.kind === 'punish') await this.punish(step.soon);
    else if (step.kind === 'revoke') await this.revoke();
    else if (step.kind === 'delete') await this.remove();
    else await this.othersReport();
  }

  /** Erases them: succeeds, or is held while a punishment is in force and succeeds once it is lifted. */
  async erase(reference: string) {
    const erase = () => call('POST', `/admin/subjects/${this.person}/erase`, director.headers, { reason: 'Asked by email', reference });
    let res = await erase();
    if (res.status === 409) {
      expect(res.body).toMatchObject({ success: false, code: 'PUNISHMENT_IN_FORCE' });
      // Lift every punishment: revoke what is in force (an expired one is swept at the pickup), deliver the lifts.
      await new Promise((resolve) => setTimeout(resolve, 350));
      await drain();
      for (const id of this.punishments) await call('POST', `/punishments/${id}/revoke`, manager.headers, { reason: 'Lifted for the erasure' });
      await drain();
      res = await erase();
    }
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    for (const report of this.reports) report.erased = true;
    return res.body as { pseudonym: string };
  }

  /** Nothing of theirs anywhere; the other people's reports as they were. */
  async checkGone() {
    expect(await traces(t.db.production, [this.person, ...this.secrets])).toEqual([]);
    for (const [id, row] of this.others) expect(await this.reportRow(id), id).toEqual(row);
  }
}

const SEED = seedOf('ERASURE_PROPERTY_SEED', 2026112839);
/** ERASURE_PROPERTY_RUNS: the number of cases of a campaign outside CI (docs/testing.md). */
const CAMPAIGN = Number(process.env.ERASURE_PROPERTY_RUNS ?? '') || 0;

/** The property for one case: the steps, the erasure, the steps after it, the second erasure, the tampering. */
async function erasedTwice(steps: readonly Step[], later: readonly Step[], mutation: Mutation, withKeys = false) {
  keyed = withKeys;
  const run = new Run();
  // At least one report names them, whatever the steps.
  await run.file({ kind: 'file', role: 'reporter', url: true, quote: false });
  for (const step of steps) await run.apply(step);
  const first = await run.erase(`GDPR-${run.token}-1`);
  await run.checkGone();
  await sealedAndVerified(t.db.production);
  // They appear again, more happens, and they ask again.
  await run.file({ kind: 'file', role: 'reported', url: false, quote: false });
  for (const step of later) await run.apply(step);
  const second = await run.erase(`GDPR-${run.token}-2`);
  expect(second.pseudonym).toBe(first.pseudonym);
  await run.checkGone();
  await sealedAndVerified(t.db.production);
  await tamperedRowIsNamed(t.db.production, mutation);
}

/**
 * Shrunk counterexamples the property found, kept: each fails on the code before its fix.
 * 1. (seed 819795152, long run) After the first erasure the report they filed names their
 *    pseudonym; the bot relays a new message from them there; the second erasure, looking for
 *    their chat id only, left the message and their name in it.
 * 2. (seed 968886095, long run, CI of stop 45) After the first erasure the bot sends their chat
 *    profile for the report they filed, which names their pseudonym now: refused 400 since
 *    0332ab5, which the property's model did not know (a defect of the test, not of the service).
 */
const REGRESSIONS: [string, Step[], Step[]][] = [
  ['a message relayed from them on a report an earlier erasure pseudonymised', [{ kind: 'punish', soon: false }], [{ kind: 'delete' }, { kind: 'contact' }]],
  ['their chat profile sent for a report an earlier erasure pseudonymised', [{ kind: 'punish', soon: false }], [{ kind: 'delete' }, { kind: 'profiles', extra: false }]],
];

describe(`erasure of a person put anywhere by the routes, on ${storeName}`, () => {
  it('succeeds, leaves nothing of them and nothing else changed, the chain verifies, and again after they reappear', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(STEP, { minLength: 1, maxLength: runs(6, 12) }), fc.array(STEP, { maxLength: 4 }), MUTATION, fc.boolean(), erasedTwice),
      { numRuns: CAMPAIGN || runs(3, 25), seed: SEED },
    );
  }, CAMPAIGN > 0 ? CAMPAIGN * 10_000 : runs(120_000, 900_000));

  for (const [name, steps, later] of REGRESSIONS) it(`regression: ${name}`, () => erasedTwice(steps, later, { kind: 'erased', pick: 0 }), 60_000);
});
