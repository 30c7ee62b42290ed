// The only reader of process.env. Every variable of the operational contract (DESIGN.md) is parsed
// here, once, into a typed Config; a malformed value stops the boot with a message naming it.
// The parsers live by concern in src/config/; this file reads the variables in order and checks
// that they agree with each other.
import { existsSync, readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { readBackup, type BackupConfig } from './config/backup.js';
import { databaseProblems, parsePoolSize, parsePostgresUrl, parsePostgresUrls, parseReplicaLag } from './config/database.js';
import { ENVIRONMENTS, parseHosts, type EnvironmentConfig, type EnvironmentName } from './config/environments.js';
import { parseRetentionDays, parseSealInterval, parseSeconds, parseWhole } from './config/limits.js';
import { reader, type Env } from './config/read.js';
import { apiKeyProblems, parseApiKey, parseSecret } from './config/secrets.js';
import { LOG_LEVELS, parsePort, parseTrustProxy } from './config/server.js';
import { parseChatId, readChatOAuth, type ChatOAuthConfig } from './config/sign-in.js';
import { oneOf, parseBoolean, parseHttpUrl, parseList, parseOrigin } from './config/values.js';

export type { BackupConfig } from './config/backup.js';
export { ENVIRONMENTS, type EnvironmentConfig, type EnvironmentName } from './config/environments.js';
export { API_KEY_MIN_LENGTH } from './config/secrets.js';
export type { ChatOAuthConfig } from './config/sign-in.js';

export interface Config {
  port: number;
  host: string;
  /** METRICS_PORT: a second listener on `host` serving only GET /metrics; undefined: no metrics. */
  metricsPort: number | undefined;
  serviceName: string;
  dataDir: string;
  logLevel: string;
  trustProxy: boolean | string[];
  environments: Record<EnvironmentName, EnvironmentConfig>;
  /** Undefined when any of the three OAuth application values is missing: its routes answer 503. */
  chatOAuth: ChatOAuthConfig | undefined;
  dashboardOrigins: string[];
  trainingOrigins: string[];
  dashboardLoginUrl: string | undefined;
  demoAllowedChatIds: string[];
  /** DEMO_LOCAL_SIGNIN: the local sign-in page as a fictional agent, demo environment only (src/auth/local-routes.ts). */
  demoLocalSignin: boolean;
  gameRelayUrls: string[];
  gameServerKey: string | undefined;
  /** Per-attempt timeout of one relay call (GAME_RELAY_TIMEOUT_SECONDS, default 2). */
  gameRelayTimeoutMs: number;
  /** How long one fetched player list answers lookups (GAME_PLAYERS_TTL_SECONDS, default 3). */
  gamePlayersTtlMs: number;
  /** A claimed queue item not completed within this is swept back (spec Limits: 10 minutes). */
  queueStaleTimeoutMs: number;
  /** How long the answer to a request with an Idempotency-Key is kept for its retries (IDEMPOTENCY_KEY_TTL_HOURS, default 24). */
  idempotencyKeyTtlHours: number;
  /** How often each instance seals new audit rows (AUDIT_SEAL_INTERVAL_SECONDS, default 1, at most 4). */
  auditSealIntervalMs: number;
  /** A replica further behind than this serves no reads (REPLICA_MAX_LAG_SECONDS, default 5). */
  replicaMaxLagMs: number;
  /** Connections per environment's PostgreSQL pool, per instance. */
  databasePoolSize: number;
  /** DATABASE_PREPARED_STATEMENTS: named prepared statements for the hot statements; false behind a pooler that cannot carry them. */
  databasePreparedStatements: boolean;
  /** DATABASE_CONNECT_TIMEOUT_MS: a connection attempt, and a server's answer to whether it is there at all (issue 40). */
  databaseConnectTimeoutMs: number;
  /** DATABASE_STATEMENT_TIMEOUT_MS: every session's statement_timeout (migrations and verify-audit go without). */
  databaseStatementTimeoutMs: number;
  /** A request (headers and body) not received within this is answered 408 and its socket closed. */
  requestTimeoutMs: number;
  /** A connection whose request headers are not complete within this is answered 408 and closed. */
  headersTimeoutMs: number;
  /** After SIGTERM, in-flight requests get this long; then their connections are cut. */
  shutdownGraceMs: number;
  /** Realtime websockets one client address may hold open on this instance (past it: 429 before the upgrade). */
  realtimeMaxConnectionsPerAddress: number;
  /** Realtime websockets this instance holds open at most (past it: 503 before the upgrade). */
  realtimeMaxConnections: number;
  /** Requests per client address per minute on each sign-in route (past it: 429 RATE_LIMITED). */
  signinRateLimitPerMinute: number;
  /** RETENTION_DAYS: closed cases older than this are erased (src/admin/retention); undefined: kept forever. */
  retentionDays: number | undefined;
  /** Scheduled backups of the embedded environments (BACKUP_DIR); undefined when not set. */
  backup: BackupConfig | undefined;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** Reads `.env` (if present) under the real environment, which wins, and parses the result. */
export function loadConfig(env: Env = process.env, envFile = '.env'): Config {
  const fromFile = existsSync(envFile) ? parseEnv(readFileSync(envFile, 'utf8')) : {};
  return parseConfig({ ...fromFile, ...env });
}

export function parseConfig(env: Env): Config {
  const problems: string[] = [];
  const read = reader(env, problems);
  const str = (name: string) => read<string | undefined>(name, undefined, (v) => v);

  const environments = {} as Record<EnvironmentName, EnvironmentConfig>;
  for (const name of ENVIRONMENTS) {
    const prefix = name.toUpperCase();
    environments[name] = {
      name,
      hosts: read(`${prefix}_HOSTS`, name === 'production' ? ['localhost', '127.0.0.1'] : ['demo.localhost'], parseHosts),
      databaseUrl: read(`${prefix}_DATABASE_URL`, undefined, parsePostgresUrl),
      databaseDirectUrl: read(`${prefix}_DATABASE_DIRECT_URL`, undefined, parsePostgresUrl),
      replicaUrls: read(`${prefix}_DATABASE_REPLICA_URLS`, [], parsePostgresUrls),
      apiKey: read(`${prefix}_API_KEY`, undefined, parseApiKey),
      apiKeyPrevious: read(`${prefix}_API_KEY_PREVIOUS`, undefined, parseApiKey),
      realtimeSigningSecret: read(`${prefix}_REALTIME_SIGNING_SECRET`, undefined, parseSecret),
      pseudonymKey: read(`${prefix}_PSEUDONYM_KEY`, undefined, parseSecret),
      realtimeUrl: read(`${prefix}_REALTIME_URL`, undefined, parseHttpUrl),
      realtimeAnonKey: str(`${prefix}_REALTIME_ANON_KEY`),
      supabaseServiceKey: str(`${prefix}_SUPABASE_SERVICE_KEY`),
    };
  }
  const { production, demo } = environments;
  const shared = production.hosts.filter((h) => demo.hosts.includes(h));
  if (shared.length > 0) problems.push(`PRODUCTION_HOSTS, DEMO_HOSTS: ${shared.join(', ')} listed in both`);
  problems.push(...apiKeyProblems(environments));
  problems.push(...databaseProblems(Object.values(environments)));

  const dashboardOrigins = read('DASHBOARD_ORIGINS', [], (v) => parseList(v, parseOrigin));
  const chatOAuth = readChatOAuth(read, str);

  const config: Config = {
    port: read('PORT', 3000, parsePort),
    host: str('HOST') ?? '127.0.0.1',
    metricsPort: read('METRICS_PORT', undefined, parsePort),
    serviceName: str('SERVICE_NAME') ?? 'Case Management Service',
    dataDir: str('DATA_DIR') ?? './data',
    logLevel: read('LOG_LEVEL', 'info', (v) => oneOf(v.toLowerCase(), LOG_LEVELS)),
    trustProxy: read<Config['trustProxy']>('TRUST_PROXY', false, parseTrustProxy),
    environments,
    chatOAuth,
    dashboardOrigins,
    trainingOrigins: read('TRAINING_ORIGINS', [], (v) => parseList(v, parseOrigin)),
    dashboardLoginUrl: read('DASHBOARD_LOGIN_URL', dashboardOrigins[0] && `${dashboardOrigins[0]}/login`, parseHttpUrl),
    demoAllowedChatIds: read('DEMO_ALLOWED_CHAT_IDS', [], (v) => parseList(v, parseChatId)),
    demoLocalSignin: read('DEMO_LOCAL_SIGNIN', false, parseBoolean),
    gameRelayUrls: read('GAME_RELAY_URLS', [], (v) => parseList(v, parseHttpUrl)),
    gameServerKey: str('GAME_SERVER_KEY'),
    gameRelayTimeoutMs: read('GAME_RELAY_TIMEOUT_SECONDS', 2, parseSeconds) * 1000,
    gamePlayersTtlMs: read('GAME_PLAYERS_TTL_SECONDS', 3, parseSeconds) * 1000,
    queueStaleTimeoutMs: read('QUEUE_STALE_TIMEOUT_SECONDS', 600, parseSeconds) * 1000,
    idempotencyKeyTtlHours: read('IDEMPOTENCY_KEY_TTL_HOURS', 24, (raw) => parseWhole(raw, 1, 720)),
    replicaMaxLagMs: Math.round(read('REPLICA_MAX_LAG_SECONDS', 5, parseReplicaLag) * 1000),
    auditSealIntervalMs: Math.round(read('AUDIT_SEAL_INTERVAL_SECONDS', 1, parseSealInterval) * 1000),
    databasePoolSize: read('DATABASE_POOL_SIZE', 10, parsePoolSize),
    databasePreparedStatements: read('DATABASE_PREPARED_STATEMENTS', true, parseBoolean),
    databaseConnectTimeoutMs: read('DATABASE_CONNECT_TIMEOUT_MS', 5_000, (v) => parseWhole(v, 100, 600_000)),
    databaseStatementTimeoutMs: read('DATABASE_STATEMENT_TIMEOUT_MS', 30_000, (v) => parseWhole(v, 100, 86_400_000)),
    // Whole milliseconds, at least one: Node takes integers, and 0 would mean "no timeout".
    requestTimeoutMs: Math.max(1, Math.round(read('REQUEST_TIMEOUT_SECONDS', 30, parseSeconds) * 1000)),
    headersTimeoutMs: Math.max(1, Math.round(read('HEADERS_TIMEOUT_SECONDS', 10, parseSeconds) * 1000)),
    shutdownGraceMs: Math.round(read('SHUTDOWN_GRACE_SECONDS', 10, parseSeconds) * 1000),
    realtimeMaxConnectionsPerAddress: read('REALTIME_MAX_CONNECTIONS_PER_ADDRESS', 200, (v) => parseWhole(v, 1, 1_000_000)),
    realtimeMaxConnections: read('REALTIME_MAX_CONNECTIONS', 20_000, (v) => parseWhole(v, 1, 1_000_000)),
    signinRateLimitPerMinute: read('SIGNIN_RATE_LIMIT_PER_MINUTE', 30, (v) => parseWhole(v, 1, 1_000_000)),
    retentionDays: read('RETENTION_DAYS', undefined, parseRetentionDays),
    backup: readBackup(env, read, problems),
  };
  // Node refuses a headers timeout longer than the request timeout (the headers are part of it).
  if (config.headersTimeoutMs > config.requestTimeoutMs) {
    problems.push('HEADERS_TIMEOUT_SECONDS, REQUEST_TIMEOUT_SECONDS: the headers timeout may not exceed the request timeout');
  }
  // The local sign-in writes sessions into the demo database: never let that be production's.
  if (config.demoLocalSignin && demo.databaseUrl !== undefined && demo.databaseUrl === production.databaseUrl) {
    problems.push('DEMO_LOCAL_SIGNIN, DEMO_DATABASE_URL: the local sign-in needs a demo database of its own, not the production one');
  }
  // Port 0 asks for an ephemeral port, so only two fixed ports can collide.
  if (config.metricsPort !== undefined && config.metricsPort !== 0 && config.metricsPort === config.port) {
    problems.push('METRICS_PORT, PORT: metrics need a port of their own, never the public one');
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
