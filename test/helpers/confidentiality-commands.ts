// The commands of issue 38's model-based confidentiality test: every operation that can touch a
// report or a person, each by a random principal (those it would refuse answer 4xx, which is part
// of what is checked). A command picks its report by a number taken modulo the lives at run time,
// so any sequence runs against any state; ids the model does not predict (actions, deliveries,
// punishments) are read from the store. Each command records what it wrote into the model.
import fc from 'fast-check';
import { ALL, type Life, type Who, type World } from './confidentiality-model.js';

type Cmd = fc.AsyncCommand<World, World>;
const url = (text: string) => `https://evidence.example.test/case/${text}`;
const ok = (status: number) => status >= 200 && status < 300;

/** The live life of this run the number picks, or undefined when there is none. */
function pick(w: World, n: number): Life | undefined {
  const live = w.runLives().filter((l) => l.live);
  return live.length === 0 ? undefined : live[n % live.length];
}

/** The life a row of this report id belongs to: the live one, else the latest. */
const lifeOf = (w: World, reportId: string | null | undefined) =>
  reportId ? (w.live(reportId) ?? w.lives.filter((l) => l.id === reportId).at(-1)) : undefined;

/** One id of a store query's rows ($1: this run's report ids), chosen by the number; undefined when there are none. */
async function oneOf(w: World, sql: string, n: number): Promise<string | undefined> {
  const ids = await w.ids(sql, [w.runReportIds()]);
  return ids.length === 0 ? undefined : ids[n % ids.length];
}

/** Records canaries into the life of the report a queue row or punishment belongs to. */
async function addTexts(w: World, reportSql: string, texts: string[]) {
  const [reportId] = await w.ids(reportSql);
  lifeOf(w, reportId)?.texts.push(...texts);
}

class Base implements Cmd {
  constructor(
    readonly name: string,
    private readonly body: (w: World) => Promise<void>,
  ) {}
  check = () => true;
  run = async (_m: World, w: World) => this.body(w);
  toString = () => this.name;
}

const who = fc.constantFrom(...ALL);
const n = fc.nat(1_000);

type Assignee = 'director' | 'supervisor' | 'agent' | 'senior' | null;
const creation = ({ flagged, assignee, reuse }: { flagged: boolean; assignee: Assignee; reuse: boolean }) =>
    new Base(`create(${flagged ? 'flagged' : 'unflagged'}, ${assignee}, ${reuse ? 'reuse' : 'new'})`, async (w) => {
      const deleted = w.runLives().filter((l) => !l.live && !w.live(l.id)).map((l) => l.id);
      const id = reuse && deleted.length > 0 ? deleted[0]! : w.nextReportId();
      const life = w.newLife(id, flagged);
      const [reason, notes, evidence, reporterName, reportedName, evidenceUrl] = ['reason', 'notes', 'evidence', 'reporter_name', 'reported_name', 'evidence_url'].map((k) => w.canary(k));
      const res = await w.send('key', 'POST', '/reports/create', {
        report_id: id, reporter: life.reporter, reported: life.reported, reason, notes, evidence,
        reporter_name: reporterName, reported_name: reportedName, evidence_url: url(evidenceUrl!),
        is_supervisor: flagged, ...(assignee ? { assigned_agent: w.chatIdOf(assignee) } : {}),
      });
      if (res.statusCode !== 201) throw new Error(`create ${id}: ${res.statusCode} ${res.body}`);
      life.texts.push(reason!, notes!, evidence!, reporterName!, reportedName!, evidenceUrl!);
      life.shown.push(reason!, notes!);
    });
const create = fc.record({ flagged: fc.boolean(), assignee: fc.constantFrom<Assignee>('director', 'supervisor', 'agent', 'senior', null), reuse: fc.boolean() }).map(creation);

/** Every run starts with a flagged and an unflagged report of its own, so no sequence is empty of them. */
export async function seedLives(w: World): Promise<void> {
  await creation({ flagged: true, assignee: 'director', reuse: false }).run(w, w);
  await creation({ flagged: false, assignee: 'agent', reuse: false }).run(w, w);
}

const flag = fc.record({ n, on: fc.boolean() }).map(
  ({ n: i, on }) =>
    new Base(`flag(${i}, ${on})`, async (w) => {
      const life = pick(w, i);
      if (!life) return;
      const res = await w.send('key', 'PATCH', `/reports/${life.id}/update`, { is_supervisor: on });
      if (res.statusCode !== 200) throw new Error(`flag ${life.id}: ${res.statusCode} ${res.body}`);
      life.flagged = on;
    }),
);

const assign = fc.record({ n, to: fc.constantFrom('director', 'supervisor', 'agent', 'senior', 'trainer') as fc.Arbitrary<Exclude<Who, 'key' | 'trainee'>> }).map(
  ({ n: i, to }) =>
    new Base(`assign(${i}, ${to})`, async (w) => {
      const life = pick(w, i);
      if (life) await w.send('director', 'PATCH', `/reports/${life.id}/update`, { assigned_agent: w.chatIdOf(to) });
    }),
);

const act = fc.record({ n, by: who, action: fc.constantFrom('investigate', 'contact_reporter', 'validate', 'invalidate', 'claim') }).map(
  ({ n: i, by, action }) =>
    new Base(`act(${i}, ${by}, ${action})`, async (w) => {
      const life = pick(w, i);
      if (!life) return;
      const reason = w.canary(`action_${action}`);
      const res = await w.send(by, 'POST', `/reports/${life.id}/action`, { action, reason });
      if (ok(res.statusCode)) life.texts.push(reason);
    }),
);

const work = fc.record({ n, by: who, kind: fc.constantFrom('notes', 'evidence', 'timeline', 'contact/reply', 'contact/close') }).map(
  ({ n: i, by, kind }) =>
    new Base(`work(${i}, ${by}, ${kind})`, async (w) => {
      const life = pick(w, i);
      if (!life) return;
      const text = w.canary(kind.replace('/', '_'));
      const bodies: Record<string, object | undefined> = {
        notes: { note: text }, evidence: { description: text, url: url(text) }, timeline: { event: text }, 'contact/reply': { body: text }, 'contact/close': undefined,
      };
      const res = await w.send(by, 'POST', `/reports/${life.id}/${kind}`, bodies[kind]);
      if (ok(res.statusCode) && kind !== 'contact/close') {
        life.texts.push(text);
        if (kind !== 'contact/reply') life.shown.push(text);
      }
    }),
);

/** The bot's own writes on a report: the reporter's answer relayed, the parties' chat profiles. */
const bot = fc.record({ n, kind: fc.constantFrom('respond', 'profiles') }).map(
  ({ n: i, kind }) =>
    new Base(`bot(${i}, ${kind})`, async (w) => {
      const life = pick(w, i);
      if (!life) return;
      const [a, b, c, d] = ['one', 'two', 'three', 'four'].map((k) => w.canary(`${kind}_${k}`));
      const res =
        kind === 'respond'
          ? await w.send('key', 'POST', `/reports/${life.id}/contact/respond`, { body: a, sender_name: b })
          : await w.send('key', 'POST', `/reports/${life.id}/chat-profiles`, {
              reporter: { chat_id: life.reporter, username: a, global_name: b },
              reported: { chat_id: life.reported, username: c, global_name: d },
            });
      if (ok(res.statusCode)) life.texts.push(a!, b!, c!, d!);
    }),
);

const ACTION_REPORT = (id: string) => `select report_id as v from report_actions where action_id = ${Number(id)}`;

/** The bot's side of the action queue: a claim from one queue, or a completion of a claimed action. */
const actionQueue = fc.record({ n, step: fc.constantFrom('next', 'next/operator', 'next/supervisor', 'success', 'failed') }).map(
  ({ n: i, step }) =>
    new Base(`actions(${i}, ${step})`, async (w) => {
      if (step.startsWith('next')) return void (await w.send('key', 'GET', `/actions/${step}`));
      const id = await oneOf(w, `select action_id as v from report_actions where status = 'processing' and report_id = any($1::text[]) order by action_id`, i);
      if (!id) return;
      const note = w.canary('action_note');
      const res = await w.send('key', 'POST', `/actions/${id}/complete`, { result: step, note });
      if (ok(res.statusCode)) await addTexts(w, ACTION_REPORT(id), [note]);
    }),
);

/** Staff on the action queue: requeue a failed action (the queue's route or the admin's), cancel one. */
const staffQueue = fc.record({ n, by: who, how: fc.constantFrom('requeue', 'admin/requeue', 'admin/cancel') }).map(
  ({ n: i, by, how }) =>
    new Base(`queue(${i}, ${by}, ${how})`, async (w) => {
      const states = how === 'admin/cancel' ? `'pending', 'processing'` : `'failed'`;
      const id = await oneOf(w, `select action_id as v from report_actions where status in (${states}) and report_id = any($1::text[]) order by action_id`, i);
      if (!id) return;
      const reason = w.canary('queue_reason');
      const res =
        how === 'requeue'
          ? await w.send(by, 'POST', `/actions/${id}/requeue`)
          : await w.send(by, 'POST', `/admin/queue/${id}/${how.slice('admin/'.length)}`, { reason });
      if (ok(res.statusCode)) await addTexts(w, ACTION_REPORT(id), [reason]);
    }),
);

/** Punishments citing one of the run's reports ($1), live or deleted. */
const RUN_PUNISHMENTS = `select punishment_id from punishments where report_id = any($1::text[]) or deleted_report in (select id from deleted_reports where report_id = any($1::text[]))`;

const PUNISHMENT_REPORT = (id: string) => `select coalesce(report_id, (select d.report_id from deleted_reports d where d.id = p.deleted_report)) as v from punishments p where punishment_id = '${id.replace(/'/g, '')}'`;

/** A punishment of a report's reported party citing it, or a revoke of one. */
const punish = fc.record({ n, by: who, revoke: fc.boolean() }).map(
  ({ n: i, by, revoke }) =>
    new Base(`punish(${i}, ${by}, ${revoke ? 'revoke' : 'issue'})`, async (w) => {
      if (revoke) {
        const id = await oneOf(w, `select punishment_id as v from punishments where punishment_id in (${RUN_PUNISHMENTS}) order by created_at, punishment_id`, i);
        if (!id) return;
        const reason = w.canary('revoke_reason');
        const res = await w.send(by, 'POST', `/punishments/${id}/revoke`, { reason });
        if (ok(res.statusCode)) await addTexts(w, PUNISHMENT_REPORT(id), [reason]);
        return;
      }
      const life = pick(w, i);
      if (!life) return;
      const [reason, detail, notes] = ['punishment_reason', 'punishment_detail', 'punishment_notes'].map((k) => w.canary(k));
      if (by !== 'key') w.named.get(by)!.add(life.reported);
      const res = await w.send(by, 'POST', '/punishments', { user_id: life.reported, reason, detailed_reason: detail, notes, report_id: life.id });
      if (ok(res.statusCode)) life.texts.push(reason!, detail!, notes!);
    }),
);

const DELIVERY_REPORT = (id: string) => `select coalesce(p.report_id, (select d.report_id from deleted_reports d where d.id = p.deleted_report)) as v
  from discipline_deliveries dd join punishments p on p.punishment_id = dd.punishment_id where dd.item_id = ${Number(id)}`;

/** Deliveries: the bot's claim and completion, staff's requeue, and a user lookup asked for a party. */
const discipline = fc.record({ n, by: who, step: fc.constantFrom('next', 'success', 'failed', 'requeue', 'lookup') }).map(
  ({ n: i, by, step }) =>
    new Base(`discipline(${i}, ${by}, ${step})`, async (w) => {
      if (step === 'next') return void (await w.send('key', 'GET', '/discipline/next'));
      if (step === 'lookup') {
        const life = pick(w, i);
        if (!life) return;
        if (by !== 'key') w.named.get(by)!.add(life.reported);
        return void (await w.send(by, 'POST', '/discipline/user-lookup', { user_id: life.reported }));
      }
      const status = step === 'requeue' ? 'failed' : 'processing';
      const id = await oneOf(w, `select item_id as v from discipline_deliveries where status = '${status}' and punishment_id in (${RUN_PUNISHMENTS}) order by item_id`, i);
      if (!id) return;
      if (step === 'requeue') return void (await w.send(by, 'POST', `/discipline/${id}/requeue`));
      const note = w.canary('delivery_note');
      const res = await w.send('key', 'POST', `/discipline/${id}/complete`, { result: step, note });
      if (ok(res.statusCode)) await addTexts(w, DELIVERY_REPORT(id), [note]);
    }),
);

/** The Director's administration of a report: delete it, or correct a field. */
const administer = fc.record({ n, how: fc.constantFrom('delete', 'correct') }).map(
  ({ n: i, how }) =>
    new Base(`administer(${i}, ${how})`, async (w) => {
      const life = pick(w, i);
      if (!life) return;
      const [reason, name] = [w.canary(`${how}_reason`), w.canary('corrected_name')];
      if (how === 'delete') {
        const res = await w.send('director', 'DELETE', `/reports/${life.id}`, { reason });
        if (res.statusCode !== 200) throw new Error(`delete ${life.id}: ${res.statusCode} ${res.body}`);
        life.texts.push(reason);
        life.live = false;
        return;
      }
      const res = await w.send('director', 'POST', `/admin/reports/${life.id}/correct`, { fields: { reported_name: name }, reason });
      if (ok(res.statusCode)) life.texts.push(reason, name);
    }),
);

/** Personal data: a case closed past the retention erased by its pass, or a party's subject erasure. */
const personalData = fc.record({ n, how: fc.constantFrom('retention', 'erase reporter', 'erase reported') }).map(
  ({ n: i, how }) =>
    new Base(`personal(${i}, ${how})`, async (w) => {
      const life = pick(w, i);
      if (!life) return;
      if (how === 'retention') {
        // Time moved for this case only: it closed 45 days ago (what retention.test.ts does).
        const { rowCount } = await w.t.db.production.query(
          `update reports set updated_at = now() - interval '45 days' where report_id = $1::text and status in ('Validated', 'Invalidated')`, [life.id]);
        if (rowCount === 0) return;
        await w.retention.pass();
        if ((await w.ids(`select report_id as v from case_erasures where report_id = '${life.id}'`)).length > 0) life.erased = true;
        return;
      }
      const person = how === 'erase reporter' ? life.reporter : life.reported;
      const res = await w.send('director', 'POST', `/admin/subjects/${person}/erase`, { reason: 'Erasure request', reference: `GDPR-${life.id}` });
      if (ok(res.statusCode)) for (const l of w.lives) if (l.reporter === person || l.reported === person) l.erased = true;
    }),
);

/** Every command, weighted towards the ones that write texts and change flags. */
export const COMMANDS = [
  create, create, flag, flag, assign, act, act, work, work, bot, actionQueue, actionQueue, staffQueue, punish, discipline, discipline, administer, personalData,
];
