// The demo environment's fictional moderation organisation. Seeding is a list of steps, each
// writing one part of the organisation inside the caller's transaction; later parts (reports,
// punishments, scenarios) are added as steps here, and their tables to RESET_TABLES below.
import { SEAL_LOCK_KEY } from '../platform/audit-chain/hashes.js';
import type { Db, Tx } from '../platform/db/types.js';
import type { OnEnvironmentOpen } from '../platform/environments.js';
import { seedAdmin } from './seed-admin.js';
import type { SeedCounts } from './seed-counts.js';
import { seedQueues } from './seed-queues.js';
import { seedReports } from './seed-reports.js';
import { seedScenarios } from './seed-scenarios.js';

export type { SeedCounts } from './seed-counts.js';
type SeedStep = (tx: Tx) => Promise<SeedCounts>;

/**
 * The personas sign-in maps real identities onto (DEMO_ALLOWED_CHAT_IDS). Their chat ids are fixed:
 * the docs and the sign-in code refer to them.
 */
export const DEMO_PERSONAS = [
  { chatId: '100000000000000001', name: 'Morgan Hale', role: 'Director (clearance 5, admin)' },
  { chatId: '100000000000000002', name: 'Riley Castellano', role: 'Supervisor (clearance 4, trainer, admin)' },
  { chatId: '100000000000000003', name: 'Jordan Pike', role: 'Agent (clearance 2, trainer)' },
  { chatId: '100000000000000004', name: 'Sam Okafor', role: 'Onboarding trainee (clearance 1)' },
] as const;

interface SeedAgent {
  chat_id: string;
  name: string;
  status: 'onboarding' | 'active' | 'suspended' | 'inactive';
  agent_rank: 'Agent' | 'Senior Agent' | 'Supervisor' | 'Head Investigator' | 'Director';
  clearance_level: 1 | 2 | 3 | 4 | 5;
  is_trainer: boolean;
  /** [security_id, agreement_id, agent_id, clearance_id]; absent while onboarding (spec: all start null). */
  ids?: [string, string, string, string];
  joined_days_ago: number;
}

const [director, supervisor, agent, trainee] = DEMO_PERSONAS;

export const DEMO_AGENTS: readonly SeedAgent[] = [
  { chat_id: director.chatId, name: director.name, status: 'active', agent_rank: 'Director', clearance_level: 5, is_trainer: false,
    ids: ['SEC-MH01', 'AGM-10001', 'SVC-AG-10001', 'CL-501'], joined_days_ago: 900 },
  { chat_id: supervisor.chatId, name: supervisor.name, status: 'active', agent_rank: 'Supervisor', clearance_level: 4, is_trainer: true,
    ids: ['SEC-RC02', 'AGM-10002', 'SVC-AG-10002', 'CL-402'], joined_days_ago: 610 },
  { chat_id: agent.chatId, name: agent.name, status: 'active', agent_rank: 'Agent', clearance_level: 2, is_trainer: true,
    ids: ['SEC-JP03', 'AGM-10003', 'SVC-AG-10003', 'CL-203'], joined_days_ago: 240 },
  { chat_id: trainee.chatId, name: trainee.name, status: 'onboarding', agent_rank: 'Agent', clearance_level: 1, is_trainer: false,
    joined_days_ago: 3 },
  { chat_id: '318640275119384062', name: 'Avery Lindqvist', status: 'active', agent_rank: 'Head Investigator', clearance_level: 5,
    is_trainer: false, ids: ['SEC-AL05', 'AGM-20417', 'SVC-AG-31822', 'CL-517'], joined_days_ago: 720 },
  { chat_id: '402915736648201577', name: 'Casey Moreau', status: 'active', agent_rank: 'Head Investigator', clearance_level: 4,
    is_trainer: true, ids: ['SEC-CM06', 'AGM-20588', 'SVC-AG-31907', 'CL-433'], joined_days_ago: 505 },
  { chat_id: '527381904416650238', name: 'Drew Nakamura', status: 'active', agent_rank: 'Supervisor', clearance_level: 3,
    is_trainer: false, ids: ['SEC-DN07', 'AGM-21034', 'SVC-AG-32251', 'CL-318'], joined_days_ago: 430 },
  { chat_id: '611047382295518804', name: 'Elliot Varga', status: 'active', agent_rank: 'Senior Agent', clearance_level: 3,
    is_trainer: true, ids: ['SEC-EV08', 'AGM-21390', 'SVC-AG-32466', 'CL-329'], joined_days_ago: 365 },
  { chat_id: '745529016683307129', name: 'Harper Quinn', status: 'suspended', agent_rank: 'Senior Agent', clearance_level: 2,
    is_trainer: false, ids: ['SEC-HQ09', 'AGM-21877', 'SVC-AG-32790', 'CL-244'], joined_days_ago: 300 },
  { chat_id: '836612470059934415', name: 'Kai Brennan', status: 'active', agent_rank: 'Agent', clearance_level: 2, is_trainer: false,
    ids: ['SEC-KB10', 'AGM-22105', 'SVC-AG-33018', 'CL-251'], joined_days_ago: 120 },
  { chat_id: '903358127741602996', name: 'Logan Reyes', status: 'inactive', agent_rank: 'Agent', clearance_level: 1, is_trainer: false,
    ids: ['SEC-LR11', 'AGM-19650', 'SVC-AG-30477', 'CL-162'], joined_days_ago: 820 },
  { chat_id: '968204413375590841', name: 'Noor Haddad', status: 'onboarding', agent_rank: 'Agent', clearance_level: 1, is_trainer: false,
    joined_days_ago: 6 },
  { chat_id: '990147652208813370', name: 'Tomás Ferreira', status: 'onboarding', agent_rank: 'Agent', clearance_level: 1,
    is_trainer: false, joined_days_ago: 1 },
];

/** Admin allowlist entries: the two admin personas, a Head Investigator, and one revoked entry. */
export const DEMO_ALLOWLIST: readonly { chat_id: string; active: boolean }[] = [
  { chat_id: director.chatId, active: true },
  { chat_id: supervisor.chatId, active: true },
  { chat_id: '318640275119384062', active: true },
  { chat_id: '527381904416650238', active: false },
];

const SEEDED_CHAT_IDS = DEMO_AGENTS.map((a) => a.chat_id);

// An upsert, not an insert: on a reset the seeded agents keep their rows, so the sessions that
// hang off them (the caller's own included) stay valid.
async function seedAgents(tx: Tx): Promise<SeedCounts> {
  const rows = DEMO_AGENTS.map(({ ids, ...a }) => ({
    ...a,
    security_id: ids?.[0] ?? null,
    agreement_id: ids?.[1] ?? null,
    agent_id: ids?.[2] ?? null,
    clearance_id: ids?.[3] ?? null,
  }));
  const { rowCount } = await tx.query(
    `insert into agents (chat_id, name, status, agent_rank, security_id, agreement_id, agent_id, clearance_id, clearance_level,
                         is_trainer, created_at, updated_at)
     select chat_id, name, status, agent_rank, security_id, agreement_id, agent_id, clearance_id, clearance_level, is_trainer,
            now() - make_interval(days => joined_days_ago), now()
     from jsonb_to_recordset($1::jsonb) as x(chat_id text, name text, status text, agent_rank text, security_id text,
          agreement_id text, agent_id text, clearance_id text, clearance_level smallint, is_trainer boolean, joined_days_ago int)
     on conflict (chat_id) do update set
       name = excluded.name, status = excluded.status, agent_rank = excluded.agent_rank, security_id = excluded.security_id,
       agreement_id = excluded.agreement_id, agent_id = excluded.agent_id, clearance_id = excluded.clearance_id,
       clearance_level = excluded.clearance_level, is_trainer = excluded.is_trainer, created_at = excluded.created_at,
       updated_at = excluded.updated_at`,
    [JSON.stringify(rows)],
  );
  return { agents: rowCount };
}

async function seedAllowlist(tx: Tx): Promise<SeedCounts> {
  const { rowCount } = await tx.query(
    `insert into admin_allowlist (chat_id, active, granted_by)
     select chat_id, active, $2::text from jsonb_to_recordset($1::jsonb) as x(chat_id text, active boolean)
     on conflict (chat_id) do update set active = excluded.active, granted_by = excluded.granted_by, updated_at = now()`,
    [JSON.stringify(DEMO_ALLOWLIST), director.chatId],
  );
  return { admin_allowlist: rowCount };
}

const steps: readonly SeedStep[] = [seedAgents, seedAllowlist, seedReports, seedQueues, seedAdmin, seedScenarios];

/**
 * Every table of demo data, children before parents (a delete never trips a foreign key). A new
 * table of data goes here too, before the tables it references; `where` keeps rows a reset must
 * not drop. `sessions` and `schema_migrations` are deliberately absent: sessions of the seeded
 * agents survive a reset, the others go with their agent (on delete cascade).
 */
export const RESET_TABLES: readonly { table: string; where?: string }[] = [
  { table: 'discipline_deliveries' },
  { table: 'punishments' },
  { table: 'report_actions' },
  { table: 'contact_messages' },
  { table: 'contact_threads' },
  { table: 'report_notes' },
  { table: 'report_evidence' },
  { table: 'report_timeline' },
  { table: 'deleted_reports' },
  { table: 'chat_profiles' },
  { table: 'reports' },
  { table: 'audit_log' },
  // Answers kept for retries (Idempotency-Key): about the demo data a reset replaces.
  { table: 'idempotency_keys' },
  // The records of erasures: of the demo's own fictional people, gone with them.
  { table: 'subject_erasures' },
  { table: 'case_erasures' },
  { table: 'health_incidents' },
  { table: 'training_notes' },
  { table: 'training_injections' },
  { table: 'training_session_scenarios' },
  { table: 'training_session_members' },
  { table: 'training_sessions' },
  { table: 'training_scenarios' },
  { table: 'events' },
  // The demo's audit chain starts again with the seeded rows (docs/decisions.md).
  { table: 'audit_chain' },
  { table: 'audit_seal_salts' },
  { table: 'audit_verifications' },
  { table: 'admin_allowlist' },
  { table: 'agents', where: 'chat_id <> all($1::text[])' },
];
/** Tables a reset leaves alone (checked by the tests: every other table must be in RESET_TABLES). */
// report_counts is derived: the triggers on reports keep it right through the deletes above.
// health_state is the status last recorded by this deployment's health checks, not demo data.
// realtime_outbox is transport, not data: broadcasts in flight between instances.
// audit_chain_state holds the sealer's cursors: still right (the seeded rows' transaction comes after them).
// read_positions are the callers' WAL positions for read-your-writes: a reset is itself a write
// whose position its caller gets, so no position may go back.
// signing_keys are the environment's own secrets, held in memory by every instance: a new one
// would refuse the sign-ins under way.
// pseudonym_key_fingerprint is the fingerprint of the key every instance erases under, which a
// reset does not change (the key lives outside the database).
// timeline_marks are the instances' marks of the primary's timeline, which their replicas must
// have replayed to serve (platform/db/timelines.ts): not demo data.
export const PRESERVED_TABLES: readonly string[] = [
  'schema_migrations', 'sessions', 'report_counts', 'health_state', 'realtime_outbox', 'audit_chain_state', 'read_positions', 'signing_keys', 'pseudonym_key_fingerprint',
  'timeline_marks',
];

// Seeding and resetting take one advisory lock: two instances starting together, or two resets
// at once, run one after the other instead of deadlocking on each other's rows.
const SEED_LOCK_KEY = 4_207_110_914;

/** Writes the demo organisation into a migrated database, inside the caller's transaction. */
export async function seedDemo(tx: Tx): Promise<SeedCounts> {
  await tx.query('select pg_advisory_xact_lock($1::bigint)', [SEED_LOCK_KEY]);
  const counts: SeedCounts = {};
  for (const step of steps) Object.assign(counts, await step(tx));
  return counts;
}

/** Seeds on first start only (no agents yet); true when it seeded. */
export async function seedDemoIfEmpty(db: Db): Promise<boolean> {
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1::bigint)', [SEED_LOCK_KEY]);
    const { rows } = await tx.query<{ seeded: boolean }>('select exists (select 1 from agents) as seeded');
    if (rows[0]?.seeded) return false;
    await seedDemo(tx);
    return true;
  });
}

/** Environments.open's onOpen hook (src/server.ts, the test app): the demo is seeded on its first start. */
export const seedDemoOnFirstStart: OnEnvironmentOpen = async (name, db, log) => {
  if (name === 'demo' && (await seedDemoIfEmpty(db))) log.info('demo environment seeded (first start)');
};

/**
 * Back to the seeded state, in the caller's transaction. `delete from`, not `truncate`: truncate
 * takes an exclusive lock that would stall every reader until the commit; delete lets concurrent
 * requests keep reading the old rows until then.
 */
export async function resetDemo(tx: Tx): Promise<SeedCounts> {
  await tx.query('select pg_advisory_xact_lock($1::bigint)', [SEED_LOCK_KEY]);
  // A sealing batch under way commits first; none starts until the reset has committed.
  await tx.query('select pg_advisory_xact_lock($1::bigint)', [SEAL_LOCK_KEY]);
  for (const { table, where } of RESET_TABLES) {
    await tx.query(`delete from ${table}${where ? ` where ${where}` : ''}`, where ? [SEEDED_CHAT_IDS] : []);
  }
  return seedDemo(tx);
}
