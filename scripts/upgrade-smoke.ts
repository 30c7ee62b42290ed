// The smoke traffic of the upgrade check (scripts/upgrade-check.ts): what the dashboard and the bot
// do most, sent to one running build, each answer checked by status and body. Every step runs
// even after one failed (a broken creation is reported, and what does not depend on it still
// runs), so a failing run names everything the schema broke for that build.
import { randomBytes } from 'node:crypto';
import { browserSignIn } from '../bench/lib/sign-in.js';

export interface StepResult {
  build: string;
  step: string;
  ok: boolean;
  detail: string;
}

export interface SmokeTarget {
  /** The build's label in the results ("release before", "this release"). */
  build: string;
  url: string;
  apiKey: string;
  /** An active Director of that environment, signed in through the chat platform's flow. */
  directorChatId: string;
  /** Another build serving the same database: the report created here is read there too. */
  other?: { build: string; url: string };
}

interface Answer {
  status: number;
  body: any;
}

async function call(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<Answer> {
  const headers = { ...init.headers, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) };
  const res = await fetch(url, { method: init.method ?? 'GET', headers, body: init.body === undefined ? undefined : JSON.stringify(init.body), redirect: 'manual' });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    // not JSON: kept as text for the report
  }
  return { status: res.status, body };
}

const shown = (a: Answer) => `${a.status} ${typeof a.body === 'string' ? a.body.slice(0, 300) : JSON.stringify(a.body)?.slice(0, 300)}`;

/** Runs the smoke traffic against `target`; one result per step. */
export async function smoke(target: SmokeTarget): Promise<StepResult[]> {
  const results: StepResult[] = [];
  const { url, apiKey } = target;
  const key = { authorization: apiKey };
  const reportId = `UPG-${randomBytes(4).toString('hex').toUpperCase()}`;
  let cookie: { cookie: string } = { cookie: '' };

  /** One step: `check` returns what is wrong with the answer, or nothing. */
  async function step(name: string, run: () => Promise<Answer>, check: (a: Answer) => string | undefined): Promise<Answer | undefined> {
    try {
      const answer = await run();
      const wrong = check(answer);
      results.push({ build: target.build, step: name, ok: wrong === undefined, detail: wrong === undefined ? String(answer.status) : `${wrong}: ${shown(answer)}` });
      return answer;
    } catch (err) {
      results.push({ build: target.build, step: name, ok: false, detail: (err as Error).message.slice(0, 300) });
      return undefined;
    }
  }
  const status = (expected: number, more?: (body: any) => string | undefined) => (a: Answer) =>
    a.status !== expected ? `expected ${expected}` : more?.(a.body);

  await step(
    'sign-in (chat platform flow), then GET /auth/me',
    async () => {
      cookie = { cookie: await browserSignIn(url, target.directorChatId) };
      return call(`${url}/auth/me`, { headers: cookie });
    },
    status(200, (b) => (b?.agent?.chat_id === target.directorChatId ? undefined : 'another agent')),
  );
  await step(
    'report creation (POST /reports/create, key)',
    () => call(`${url}/reports/create`, { method: 'POST', headers: key, body: { report_id: reportId, reporter: '400000000000000001', reported: '400000000000000002', reason: 'Upgrade check', notes: 'n', evidence: 'e' } }),
    status(201, (b) => (b?.report?.report_id === reportId && b.report.status === 'Open' ? undefined : 'not the report sent')),
  );
  await step(
    'list (GET /reports, session)',
    () => call(`${url}/reports`, { headers: cookie }),
    status(200, (b) => (Array.isArray(b?.reports) && b.reports.some((r: any) => r.report_id === reportId) ? undefined : `${reportId} not listed`)),
  );
  if (target.other) {
    const other = target.other;
    await step(
      `the report read on ${other.build} (GET /reports/<id>, same session)`,
      () => call(`${other.url}/reports/${reportId}`, { headers: cookie }),
      status(200, (b) => (b?.report?.report_id === reportId ? undefined : 'another report')),
    );
  }
  await step(
    'claim (POST /reports/<id>/action claim, session)',
    () => call(`${url}/reports/${reportId}/action`, { method: 'POST', headers: cookie, body: { action: 'claim', reason: 'Upgrade check' } }),
    status(200, (b) => (b?.report?.assigned_agent === target.directorChatId ? undefined : 'not assigned to the caller')),
  );
  const picked = await step(
    'queue claim (GET /actions/next, key)',
    () => call(`${url}/actions/next`, { headers: key }),
    status(200, (b) => (b?.action?.report_id === reportId && b.action.kind === 'claim' && b.action.status === 'processing' ? undefined : 'not the claim action of the report')),
  );
  const actionId = picked?.body?.action?.action_id as number | undefined;
  await step(
    'queue completion (POST /actions/<id>/complete, key)',
    () => call(`${url}/actions/${actionId ?? 0}/complete`, { method: 'POST', headers: key, body: { result: 'success', note: 'done' } }),
    status(200, (b) => (b?.action?.action_id === actionId && b.action.status === 'success' ? undefined : 'not completed')),
  );
  await step(
    'audit search (GET /audit?search=<id>, session)',
    () => call(`${url}/audit?search=${reportId}`, { headers: cookie }),
    status(200, (b) => {
      const types = new Set<string>((b?.events ?? []).map((e: any) => e.type));
      const missing = ['report.created', 'report.assigned'].filter((t) => !types.has(t));
      return missing.length === 0 ? undefined : `missing ${missing.join(', ')}`;
    }),
  );
  await step(
    'report deletion (DELETE /reports/<id>, session)',
    () => call(`${url}/reports/${reportId}`, { method: 'DELETE', headers: cookie, body: { reason: 'Upgrade check' } }),
    status(200, (b) => (b?.deleted?.report_id === reportId ? undefined : 'not the report deleted')),
  );
  await step(
    'the deleted report is gone (GET /reports/<id>)',
    () => call(`${url}/reports/${reportId}`, { headers: cookie }),
    status(404),
  );
  if (target.other) {
    // Deletion again, on a report the other build wrote (its timeline rows as that build writes
    // them), so this build's deletion is checked even when its own creation failed.
    const other = target.other;
    const otherId = `${reportId}-X`;
    await step(
      `deletion of a report ${other.build} created (DELETE /reports/<id>, session)`,
      async () => {
        const created = await call(`${other.url}/reports/create`, { method: 'POST', headers: key, body: { report_id: otherId, reporter: '400000000000000003', reported: '400000000000000004', reason: 'Upgrade check', notes: 'n', evidence: 'e' } });
        if (created.status !== 201) throw new Error(`its creation on ${other.build} answered ${shown(created)}`);
        return call(`${url}/reports/${otherId}`, { method: 'DELETE', headers: cookie, body: { reason: 'Upgrade check' } });
      },
      status(200, (b) => (b?.deleted?.report_id === otherId ? undefined : 'not the report deleted')),
    );
  }
  return results;
}

/** GET /ready answers 200, and (for builds that carry it) names the expected commit. */
export async function readyStep(build: string, url: string, commit?: string): Promise<StepResult> {
  try {
    const answer = await call(`${url}/ready`);
    const wrong = answer.status !== 200 ? 'expected 200' : commit !== undefined && answer.body?.commit !== commit ? `expected commit ${commit}` : undefined;
    return { build, step: 'GET /ready', ok: wrong === undefined, detail: wrong === undefined ? `200${commit ? ` ${answer.body.version} ${commit.slice(0, 10)}` : ''}` : `${wrong}: ${shown(answer)}` };
  } catch (err) {
    return { build, step: 'GET /ready', ok: false, detail: (err as Error).message };
  }
}
