// The only reader of process.env. Every variable of the operational contract (DESIGN.md) is parsed
// here, once, into a typed Config; a malformed value stops the boot with a message naming it.
import { existsSync, readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { describeConnectionUrl, parseConnectionUrl } from './platform/db/connection-url.js';

export const ENVIRONMENTS = ['production', 'demo'] as const;
export type EnvironmentName = (typeof ENVIRONMENTS)[number];

export interface EnvironmentConfig {
  name: EnvironmentName;
  hosts: string[];
  databaseUrl: string | undefined;
  /** PostgreSQL itself when databaseUrl is a pooler (<ENV>_DATABASE_DIRECT_URL): LISTEN, migrations, backups, verify-audit. */
  databaseDirectUrl: string | undefined;
  /** Streaming replicas of databaseUrl that serve reads (<ENV>_DATABASE_REPLICA_URLS); empty: none. */
  replicaUrls: string[];
  apiKey: string | undefined;
  /** During a key rotation, the old key, accepted beside apiKey and counted (<ENV>_API_KEY_PREVIOUS). */
  apiKeyPrevious: string | undefined;
  realtimeSigningSecret: string | undefined;
  realtimeUrl: string | undefined;
  realtimeAnonKey: string | undefined;
  supabaseServiceKey: string | undefined;
}

export interface ChatOAuthConfig {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  authorizeUrl: string;
  tokenUrl: string;
  userUrl: string;
  proxyUrl: string | undefined;
}

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
  /** How often each instance seals new audit rows (AUDIT_SEAL_INTERVAL_SECONDS, default 1, at most 4). */
  auditSealIntervalMs: number;
  /** A replica further behind than this serves no reads (REPLICA_MAX_LAG_SECONDS, default 5). */
  replicaMaxLagMs: number;
  /** Connections per environment's PostgreSQL pool, per instance. */
  databasePoolSize: number;
  /** DATABASE_PREPARED_STATEMENTS: named prepared statements for the hot statements; false behind a pooler that cannot carry them. */
  databasePreparedStatements: boolean;
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
  /** Scheduled backups of the embedded environments (BACKUP_DIR); undefined when not set. */
  backup: BackupConfig | undefined;
}

export interface BackupConfig {
  dir: string;
  /** BACKUP_INTERVAL_MINUTES, default 60; fractions allowed (a test runs at a few seconds). */
  intervalMs: number;
  /** BACKUP_KEEP, default 7: backups kept per environment, the newest. */
  keep: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Reads `.env` (if present) under the real environment, which wins, and parses the result. */
export function loadConfig(env: Env = process.env, envFile = '.env'): Config {
  const fromFile = existsSync(envFile) ? parseEnv(readFileSync(envFile, 'utf8')) : {};
  return parseConfig({ ...fromFile, ...env });
}

export function parseConfig(env: Env): Config {
  const problems: string[] = [];
  // Each reader records a problem naming the variable instead of throwing, so one boot reports all.
  const read = <T>(name: string, fallback: T, parse: (raw: string) => T): T => {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') return fallback;
    try {
      return parse(raw);
    } catch (err) {
      // A connection URL may carry a password: the report names its hosts, never the URL.
      const got = /_DATABASE_\w*URLS?$/.test(name) ? describeConnectionUrl(raw) : JSON.stringify(raw);
      problems.push(`${name}: ${(err as Error).message} (got ${got})`);
      return fallback;
    }
  };
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
      realtimeUrl: read(`${prefix}_REALTIME_URL`, undefined, parseHttpUrl),
      realtimeAnonKey: str(`${prefix}_REALTIME_ANON_KEY`),
      supabaseServiceKey: str(`${prefix}_SUPABASE_SERVICE_KEY`),
    };
  }
  const { production, demo } = environments;
  const shared = production.hosts.filter((h) => demo.hosts.includes(h));
  if (shared.length > 0) problems.push(`PRODUCTION_HOSTS, DEMO_HOSTS: ${shared.join(', ')} listed in both`);
  problems.push(...apiKeyProblems(environments));
  for (const { name, databaseUrl, databaseDirectUrl, replicaUrls } of Object.values(environments)) {
    const prefix = name.toUpperCase();
    if (databaseDirectUrl !== undefined && databaseUrl === undefined) problems.push(`${prefix}_DATABASE_DIRECT_URL: set without ${prefix}_DATABASE_URL (the direct connection is beside a pooler's URL)`);
    // Replicas copy a PostgreSQL primary; the embedded store has none to copy.
    if (replicaUrls.length > 0 && databaseUrl === undefined) problems.push(`${prefix}_DATABASE_REPLICA_URLS: set without ${prefix}_DATABASE_URL (replicas serve a PostgreSQL primary's reads)`);
    if (databaseUrl !== undefined && replicaUrls.includes(databaseUrl)) problems.push(`${prefix}_DATABASE_REPLICA_URLS: lists ${prefix}_DATABASE_URL itself`);
  }

  const dashboardOrigins = read('DASHBOARD_ORIGINS', [], (v) => parseList(v, parseOrigin));
  const clientId = str('CHAT_OAUTH_CLIENT_ID');
  const clientSecret = str('CHAT_OAUTH_CLIENT_SECRET');
  const redirectUri = read('CHAT_OAUTH_REDIRECT_URI', undefined, parseHttpUrl);
  const endpoints = {
    authorizeUrl: read('CHAT_OAUTH_AUTHORIZE_URL', 'https://discord.com/oauth2/authorize', parseHttpUrl),
    tokenUrl: read('CHAT_OAUTH_TOKEN_URL', 'https://discord.com/api/oauth2/token', parseHttpUrl),
    userUrl: read('CHAT_API_USER_URL', 'https://discord.com/api/users/@me', parseHttpUrl),
    proxyUrl: read('CHAT_OAUTH_PROXY_URL', undefined, parseHttpUrl),
  };

  const config: Config = {
    port: read('PORT', 3000, parsePort),
    host: str('HOST') ?? '127.0.0.1',
    metricsPort: read('METRICS_PORT', undefined, parsePort),
    serviceName: str('SERVICE_NAME') ?? 'Case Management Service',
    dataDir: str('DATA_DIR') ?? './data',
    logLevel: read('LOG_LEVEL', 'info', (v) => oneOf(v.toLowerCase(), LOG_LEVELS)),
    trustProxy: read<Config['trustProxy']>('TRUST_PROXY', false, parseTrustProxy),
    environments,
    chatOAuth:
      clientId && clientSecret && redirectUri ? { clientId, clientSecret, redirectUri, ...endpoints } : undefined,
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
    replicaMaxLagMs: Math.round(read('REPLICA_MAX_LAG_SECONDS', 5, parseReplicaLag) * 1000),
    auditSealIntervalMs: Math.round(read('AUDIT_SEAL_INTERVAL_SECONDS', 1, parseSealInterval) * 1000),
    databasePoolSize: read('DATABASE_POOL_SIZE', 10, parsePoolSize),
    databasePreparedStatements: read('DATABASE_PREPARED_STATEMENTS', true, parseBoolean),
    // Whole milliseconds, at least one: Node takes integers, and 0 would mean "no timeout".
    requestTimeoutMs: Math.max(1, Math.round(read('REQUEST_TIMEOUT_SECONDS', 30, parseSeconds) * 1000)),
    headersTimeoutMs: Math.max(1, Math.round(read('HEADERS_TIMEOUT_SECONDS', 10, parseSeconds) * 1000)),
    shutdownGraceMs: Math.round(read('SHUTDOWN_GRACE_SECONDS', 10, parseSeconds) * 1000),
    realtimeMaxConnectionsPerAddress: read('REALTIME_MAX_CONNECTIONS_PER_ADDRESS', 200, (v) => parseWhole(v, 1, 1_000_000)),
    realtimeMaxConnections: read('REALTIME_MAX_CONNECTIONS', 20_000, (v) => parseWhole(v, 1, 1_000_000)),
    signinRateLimitPerMinute: read('SIGNIN_RATE_LIMIT_PER_MINUTE', 30, (v) => parseWhole(v, 1, 1_000_000)),
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

function readBackup(env: Env, read: <T>(name: string, fallback: T, parse: (raw: string) => T) => T, problems: string[]): BackupConfig | undefined {
  const dir = read<string | undefined>('BACKUP_DIR', undefined, (v) => v);
  const intervalMs = Math.round(read('BACKUP_INTERVAL_MINUTES', 60, parseMinutes) * 60_000);
  const keep = read('BACKUP_KEEP', 7, parseKeep);
  if (dir !== undefined) return { dir, intervalMs, keep };
  // A schedule without a folder is a mistake to name, not a setting to ignore.
  const orphans = ['BACKUP_INTERVAL_MINUTES', 'BACKUP_KEEP'].filter((name) => env[name]?.trim());
  if (orphans.length > 0) problems.push(`${orphans.join(', ')}: set without BACKUP_DIR`);
  return undefined;
}

function parseMinutes(raw: string): number {
  const minutes = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || minutes < 0.01 || minutes > 10_080) throw new Error('expected a number of minutes from 0.01 to 10080 (a week)');
  return minutes;
}

function parseKeep(raw: string): number {
  const keep = Number(raw);
  if (!/^\d+$/.test(raw) || keep < 1 || keep > 1000) throw new Error('expected a whole number from 1 to 1000');
  return keep;
}

function parseList<T>(raw: string, parseItem: (item: string) => T): T[] {
  const items = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (items.length === 0) throw new Error('expected a comma-separated list');
  return items.map(parseItem);
}

const HOSTNAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

function parseHosts(raw: string): string[] {
  return parseList(raw, (item) => {
    const host = item.toLowerCase();
    if (!HOSTNAME.test(host)) throw new Error(`"${item}" is not a host name (no scheme, port or path)`);
    return host;
  });
}

function parsePort(raw: string): number {
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) throw new Error('expected an integer from 0 to 65535');
  return port;
}

function parseUrl(raw: string, protocols: string[], what: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`expected ${what}`);
  }
  if (!protocols.includes(url.protocol)) throw new Error(`expected ${what}`);
  return url;
}

function parseHttpUrl(raw: string): string {
  return parseUrl(raw, ['http:', 'https:'], 'an http(s) URL').toString().replace(/\/$/, '');
}

/** One host, or libpq's several (`postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write`). */
function parsePostgresUrl(raw: string): string {
  parseConnectionUrl(raw);
  return raw;
}

/**
 * A comma list of connection URLs, each of which may itself list hosts with commas (libpq's
 * multi-host form): a new URL starts only where a comma is followed by a scheme.
 */
function parsePostgresUrls(raw: string): string[] {
  const items = raw.split(/,(?=\s*postgres(?:ql)?:\/\/)/).map((s) => s.trim()).filter((s) => s !== '');
  if (items.length === 0) throw new Error('expected a comma-separated list');
  return items.map(parsePostgresUrl);
}

function parseOrigin(raw: string): string {
  const url = parseUrl(raw, ['http:', 'https:'], 'an origin such as https://dashboard.example.org');
  if (url.pathname !== '/' || url.search || url.hash || url.username) {
    throw new Error(`"${raw}" is not a bare origin (scheme://host[:port])`);
  }
  return url.origin;
}

function parseWhole(raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) throw new Error(`expected a whole number from ${min} to ${max}`);
  return value;
}

function parsePoolSize(raw: string): number {
  const size = Number(raw);
  if (!/^\d+$/.test(raw) || size < 1 || size > 100) throw new Error('expected a whole number from 1 to 100');
  return size;
}

function parseSeconds(raw: string): number {
  const seconds = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || seconds <= 0 || seconds > 86_400) throw new Error('expected a number of seconds above 0, at most 86400');
  return seconds;
}

/** Read positions are kept 15 minutes (replicas.ts): a replica may not lag longer than that and serve. */
function parseReplicaLag(raw: string): number {
  const seconds = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || seconds < 0.1 || seconds > 300) throw new Error('expected a number of seconds from 0.1 to 300');
  return seconds;
}

/** A row committed more than 5 s ago must be sealed: a pass at least every 4 s leaves a second for it. */
function parseSealInterval(raw: string): number {
  const seconds = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || seconds < 0.1 || seconds > 4) throw new Error('expected a number of seconds from 0.1 to 4');
  return seconds;
}

function parseSecret(raw: string): string {
  if (raw.length < 32) throw new Error('expected at least 32 characters');
  return raw;
}

/** The bot's keys are bearer secrets sent whole in `Authorization`: long enough not to be guessed. */
export const API_KEY_MIN_LENGTH = 16;

function parseApiKey(raw: string): string {
  if (raw.length < API_KEY_MIN_LENGTH) throw new Error(`expected at least ${API_KEY_MIN_LENGTH} characters`);
  return raw;
}

/**
 * Every configured key (both environments, current and previous) is distinct: a key must resolve to
 * one environment, and a "previous" key equal to the current one would make a rotation a no-op.
 * A previous key alone is refused: it is the rotation's old key, beside the new one.
 */
function apiKeyProblems(environments: Record<EnvironmentName, EnvironmentConfig>): string[] {
  const problems: string[] = [];
  const keys = ENVIRONMENTS.flatMap((name) => {
    const { apiKey, apiKeyPrevious } = environments[name];
    const prefix = name.toUpperCase();
    if (apiKeyPrevious !== undefined && apiKey === undefined) {
      problems.push(`${prefix}_API_KEY_PREVIOUS: set only during a rotation, beside the new ${prefix}_API_KEY (which is unset)`);
    }
    return [
      { variable: `${prefix}_API_KEY`, name, value: apiKey },
      { variable: `${prefix}_API_KEY_PREVIOUS`, name, value: apiKeyPrevious },
    ];
  });
  for (let i = 0; i < keys.length; i++) {
    for (let j = i + 1; j < keys.length; j++) {
      const [a, b] = [keys[i]!, keys[j]!];
      if (a.value === undefined || a.value !== b.value) continue;
      problems.push(`${a.variable}, ${b.variable}: ${a.name === b.name ? 'the previous key must differ from the current one' : 'each environment needs its own key'}`);
    }
  }
  return problems;
}

function parseChatId(raw: string): string {
  if (!/^\d{1,20}$/.test(raw)) throw new Error(`"${raw}" is not a chat id (digits only)`);
  return raw;
}

function parseBoolean(raw: string): boolean {
  if (raw !== 'true' && raw !== 'false') throw new Error('expected true or false');
  return raw === 'true';
}

function parseTrustProxy(raw: string): Config['trustProxy'] {
  if (raw === 'true' || raw === 'false') return raw === 'true';
  return parseList(raw, (v) => {
    if (!/^[0-9a-fA-F.:/]+$/.test(v)) throw new Error('expected true, false, or a list of proxy addresses/CIDRs');
    return v;
  });
}

function oneOf(value: string, allowed: string[]): string {
  if (!allowed.includes(value)) throw new Error(`expected one of ${allowed.join(', ')}`);
  return value;
}
