// Schema inspection and reload (spec: System administration, admin_schema, Director only). The
// inspection compares the recorded migrations with the files as they are now and lists the stored
// functions and triggers from the catalog (identical on PGlite and PostgreSQL: both are
// PostgreSQL). The reload is a notification every instance acts on (environments.ts): it drops
// its caches and the prepared statements of its pooled connections.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import { loadMigrations } from '../platform/db/migrate.js';
import type { Queryable } from '../platform/db/types.js';
import { SCHEMA_RELOAD_CHANNEL } from '../platform/environments.js';
import { COMMON_ERRORS, errorResponses, nullableString, stringEnum, timestamp } from '../platform/http/schemas.js';
import { CorrelationId, ReasonBody } from './schemas.js';
import { lockAdmins, recordAdminChange } from './trail.js';
import { afterCommit } from '../platform/after-commit.js';

const tags = ['Administration'];

const AppliedMigration = Type.Object({
  version: Type.Integer(),
  name: Type.String(),
  applied_at: timestamp(),
  checksum: Type.String({ description: 'sha256 of the file as it was applied' }),
  file_checksum: nullableString({ description: 'sha256 of the file as it is now; null when the file is gone' }),
  changed: Type.Boolean({ description: 'The file was edited after it was applied (the next start refuses to run)' }),
});

const PendingMigration = Type.Object({ version: Type.Integer(), name: Type.String(), checksum: Type.String() });

const FUNCTION_KINDS = ['function', 'procedure', 'aggregate', 'window'] as const;
const StoredFunction = Type.Object({
  name: Type.String(),
  arguments: Type.String({ description: 'The identity arguments, as in `drop function name(arguments)`' }),
  kind: stringEnum(FUNCTION_KINDS),
  returns: nullableString({ description: 'The result type; null for a procedure' }),
  language: Type.String(),
});

const Trigger = Type.Object({
  name: Type.String(),
  table: Type.String(),
  function: Type.String({ description: 'The trigger function it runs' }),
  timing: stringEnum(['before', 'after', 'instead of'] as const),
  events: Type.Array(stringEnum(['insert', 'update', 'delete', 'truncate'] as const)),
  level: stringEnum(['row', 'statement'] as const),
  enabled: Type.Boolean(),
  definition: Type.String({ description: 'The create trigger statement, from pg_get_triggerdef' }),
});

const SchemaAnswer = Type.Object({
  success: Type.Literal(true),
  migrations: Type.Array(AppliedMigration, { description: 'Applied migrations, by version' }),
  pending: Type.Array(PendingMigration, { description: 'Migration files not applied yet (they are applied at the next start)' }),
  functions: Type.Array(StoredFunction, { description: "Functions and procedures of the service's schema, those of extensions left out" }),
  triggers: Type.Array(Trigger, { description: 'User triggers, by table' }),
});

const ReloadAnswer = Type.Object({ success: Type.Literal(true), correlation_id: CorrelationId });

type AppliedMigration = Static<typeof AppliedMigration>;
type StoredFunction = Static<typeof StoredFunction>;
type Trigger = Static<typeof Trigger>;

async function listMigrations(db: Queryable) {
  const { rows } = await db.query<{ version: number; name: string; checksum: string; applied_at: string }>(
    'select version, name, checksum, applied_at from schema_migrations order by version',
  );
  // Read now, not at start: the point is to see a file edited since.
  const files = new Map(loadMigrations().map((file) => [file.version, file]));
  const migrations: AppliedMigration[] = rows.map((row) => {
    const fileChecksum = files.get(row.version)?.checksum ?? null;
    return { ...row, file_checksum: fileChecksum, changed: fileChecksum !== null && fileChecksum !== row.checksum };
  });
  const applied = new Set(rows.map((row) => row.version));
  const pending = [...files.values()].filter((file) => !applied.has(file.version)).map(({ version, name, checksum }) => ({ version, name, checksum }));
  return { migrations, pending };
}

// Functions of the schema the migrations create into (the first on the search path: public),
// without those an extension owns (pg_trgm's, installed there by migration 0004).
async function listFunctions(db: Queryable): Promise<StoredFunction[]> {
  const { rows } = await db.query<StoredFunction>(
    `select p.proname as name, pg_get_function_identity_arguments(p.oid) as arguments,
            case p.prokind when 'p' then 'procedure' when 'a' then 'aggregate' when 'w' then 'window' else 'function' end as kind,
            pg_get_function_result(p.oid) as returns, l.lanname as language
       from pg_proc p
       join pg_language l on l.oid = p.prolang
      where p.pronamespace = current_schema()::regnamespace
        and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
      order by p.proname, arguments`,
  );
  return rows;
}

// pg_trigger.tgtype bits (PostgreSQL's catalog/pg_trigger.h); events in the order
// pg_get_triggerdef writes them.
const TRIGGER_ROW = 1;
const TRIGGER_BEFORE = 2;
const TRIGGER_INSTEAD = 64;
const TRIGGER_EVENTS = [
  [4, 'insert'],
  [8, 'delete'],
  [16, 'update'],
  [32, 'truncate'],
] as const;

async function listTriggers(db: Queryable): Promise<Trigger[]> {
  const { rows } = await db.query<{ name: string; table: string; function: string; type: number; enabled: boolean; definition: string }>(
    `select t.tgname as name, c.relname as table, p.proname as function, t.tgtype::int as type,
            t.tgenabled <> 'D' as enabled, pg_get_triggerdef(t.oid) as definition
       from pg_trigger t
       join pg_class c on c.oid = t.tgrelid
       join pg_proc p on p.oid = t.tgfoid
      where not t.tgisinternal and c.relnamespace = current_schema()::regnamespace
      order by c.relname, t.tgname`,
  );
  return rows.map(({ type, ...row }) => ({
    ...row,
    timing: type & TRIGGER_BEFORE ? 'before' : type & TRIGGER_INSTEAD ? 'instead of' : 'after',
    events: TRIGGER_EVENTS.filter(([bit]) => type & bit).map(([, event]) => event),
    level: type & TRIGGER_ROW ? 'row' : 'statement',
  }));
}

export const adminSchemaRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/admin/schema',
    {
      config: { auth: 'session', admin: 'admin_schema' },
      schema: {
        tags,
        operationId: 'getSchema',
        summary: 'Applied migrations (with the files checked against them) and the stored functions and triggers',
        response: { 200: SchemaAnswer, ...errorResponses(...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const db = request.environment.db;
      const { migrations, pending } = await listMigrations(db);
      return { success: true as const, migrations, pending, functions: await listFunctions(db), triggers: await listTriggers(db) };
    },
  );

  app.post(
    '/admin/schema/reload',
    {
      // The prepared statements are dropped before the key's transaction takes its connection: a
      // replay or a refusal drops them too, which costs a reconnect and nothing else.
      config: { auth: 'session', admin: 'admin_schema', keyLookedUpLate: true },
      schema: {
        tags,
        operationId: 'reloadSchema',
        summary: 'Make every instance drop its caches and prepared statements, to pick up a schema changed out of band',
        body: ReasonBody,
        response: { 200: ReloadAnswer, ...errorResponses(400, 415, ...COMMON_ERRORS) },
      },
    },
    async (request) => {
      const env = request.environment;
      // Before the transaction too: its own event insert is one of the prepared statements a
      // changed table breaks, and the reload must not fail on what it exists to clear. Dropping
      // them is invisible but for a reconnect, so a refused or rolled-back reload costs no more.
      env.db.resetStatements();
      const correlationId = await env.db.transaction(async (tx) => {
        await lockAdmins(tx, request, 'admin_schema');
        // Delivered on commit only, to every instance listening (this one included).
        await tx.query('select pg_notify($1::text, $2::text)', [SCHEMA_RELOAD_CHANNEL, request.id]);
        return recordAdminChange(tx, request, {
          action: 'admin.schema_reloaded',
          target: env.name,
          reason: request.body.reason,
          data: { channel: SCHEMA_RELOAD_CHANNEL },
        });
      });
      // At once (after the commit), not only when this instance hears its own notification.
      await afterCommit(env, () => env.reloadSchema());
      return { success: true as const, correlation_id: correlationId };
    },
  );
};
