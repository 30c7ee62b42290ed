// Who may touch a training session, and the one path every change to a session takes: lock the
// row, check the caller's part in it, make the change with its events in that transaction, then
// announce what was recorded after the commit (docs/decisions.md: 404 only for a session that does
// not exist, 403 for one the caller may not touch).
import type { FastifyRequest } from 'fastify';
import type { AgentRow } from '../agents/queries.js';
import { sessionAgent } from '../platform/auth/guards.js';
import { isTrainer } from '../platform/auth/permissions.js';
import type { Tx } from '../platform/db/types.js';
import { errors } from '../platform/errors.js';
import type { Actor } from '../platform/events.js';
import { actorOf, readDb } from '../platform/http/request-context.js';
import { announce, announceOnCommit, type AnnounceDeps, type Announcement } from './broadcaster.js';
import { findSession, lockSession, type SessionRow } from './session-queries.js';
import { roleOf, type Role } from './session-view.js';
import { afterCommit } from '../platform/after-commit.js';

export type TrainingDeps = AnnounceDeps;

export { isTrainer };

/**
 * The signed-in agent when they train (spec: "trainer" access); 403 TRAINER_REQUIRED otherwise. The
 * routes declare it (config.trainer), which refuses before the body is read; this asks again.
 */
export function trainer(request: FastifyRequest): AgentRow {
  const agent = sessionAgent(request);
  if (!isTrainer(agent)) throw errors.trainerRequired();
  return agent;
}

/**
 * The membership a route declares (config.member), asked before the body is validated so that a
 * caller who is not in the session learns nothing of the body's shape; changeSession and
 * readSession ask again under the lock. An unknown or malformed id is the handler's 404 or 400.
 */
export async function memberGate(request: FastifyRequest): Promise<void> {
  const access = request.routeOptions.config.member;
  if (access === undefined || request.principal?.kind !== 'session') return;
  const raw = (request.params as Record<string, unknown> | undefined)?.session_id;
  if (typeof raw !== 'string' || !/^[1-9][0-9]{0,15}$/.test(raw)) return;
  const id = Number(raw);
  const session = await findSession(readDb(request, { latest: true }), id);
  if (session) participation(session, id, request.principal.agent, access);
}

export const sessionNotFound = (id: number) => errors.notFound(`Training session ${id}`);
export const notAssignedTrainer = () => errors.forbidden('Only the assigned trainer may do this', 'NOT_SESSION_TRAINER');
export const notMember = () => errors.forbidden('Only the trainer and the trainee of this session may do this', 'NOT_SESSION_MEMBER');
export const noActiveSession = (session: SessionRow) =>
  errors.conflict(`Training session ${session.id} is ${session.status}: there is no active session for you to join`, 'NO_ACTIVE_SESSION');

/** Statuses a trainee sees (spec: GET /training/sessions): pending and aborted are hidden. */
export const TRAINEE_VISIBLE: ReadonlySet<string> = new Set(['active', 'paused', 'completed']);

/**
 * The caller's part in the session, for `access`: 404 only when no session has that id; a session
 * the caller may not touch is 403 (the ids are sequential: hiding one protects nothing), on a
 * trainer route NOT_SESSION_TRAINER for anyone but the assigned trainer, elsewhere NOT_SESSION_MEMBER.
 */
function participation(session: SessionRow | undefined, id: number, agent: AgentRow, access: 'trainer' | 'participant'): Role {
  if (!session) throw sessionNotFound(id);
  const role = roleOf(session, agent.chat_id);
  if (access === 'trainer' && role !== 'trainer') throw notAssignedTrainer();
  if (!role) throw notMember();
  return role;
}

/** A read: the session and the caller's role; a trainee on a pending or aborted session gets 409 NO_ACTIVE_SESSION. */
export async function readSession(request: FastifyRequest, id: number): Promise<{ session: SessionRow; role: Role }> {
  const agent = sessionAgent(request);
  // Read as of now: a member often reads on hearing a broadcast of another member's change.
  const session = await findSession(readDb(request, { latest: true }), id);
  const role = participation(session, id, agent, 'participant');
  if (role === 'trainee' && !TRAINEE_VISIBLE.has(session!.status)) throw noActiveSession(session!);
  return { session: session!, role };
}

export interface ChangeContext {
  session: SessionRow;
  role: Role;
  actor: Actor & { kind: 'agent' };
  correlationId: string;
}

export interface Change<T> {
  result: T;
  announce: Announcement[];
}

/**
 * Runs `fn` on the locked session for its assigned trainer (`trainer`) or either member
 * (`participant`), then broadcasts what it recorded (with the commit where the broadcaster can,
 * else after it). `fn` throws to refuse: nothing is written.
 */
export async function changeSession<T>(
  deps: TrainingDeps,
  request: FastifyRequest,
  id: number,
  access: 'trainer' | 'participant',
  fn: (tx: Tx, ctx: ChangeContext) => Promise<Change<T>>,
): Promise<T> {
  const agent = sessionAgent(request);
  const actor = actorOf(request) as Actor & { kind: 'agent' };
  const context = { environment: request.environment.name, requestId: request.id };
  const { change, session, sent } = await request.environment.db.transaction(async (tx) => {
    const session = await lockSession(tx, id);
    const role = participation(session, id, agent, access);
    const change = await fn(tx, { session: session!, role, actor, correlationId: request.id });
    return { session: session!, change, sent: await announceOnCommit(deps, tx, context, session!, change.announce) };
  });
  if (!sent) await afterCommit(request.environment, () => announce(deps, context, session, change.announce));
  return change.result;
}
