// The configuration contract (DESIGN.md): defaults, every variable parsed, malformed values named.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from '../src/config.js';

const SAME = 'the-same-key-0123456789';
const OTHER = 'another-key-0123456789';
const THIRD = 'a-third-key-0123456789';

describe('parseConfig', () => {
  it('has the documented defaults', () => {
    const config = parseConfig({});
    expect(config).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      serviceName: 'Case Management Service',
      dataDir: './data',
      logLevel: 'info',
      trustProxy: false,
      chatOAuth: undefined,
      dashboardOrigins: [],
      trainingOrigins: [],
      dashboardLoginUrl: undefined,
      demoAllowedChatIds: [],
      gameRelayUrls: [],
      gameServerKey: undefined,
      queueStaleTimeoutMs: 600_000,
      auditSealIntervalMs: 1_000,
      replicaMaxLagMs: 5_000,
      databasePoolSize: 10,
      databasePreparedStatements: true,
      realtimeMaxConnectionsPerAddress: 200,
      realtimeMaxConnections: 20_000,
      signinRateLimitPerMinute: 30,
      retentionDays: undefined,
    });
    expect(config.environments.production).toEqual({
      name: 'production',
      hosts: ['localhost', '127.0.0.1'],
      databaseUrl: undefined,
      databaseDirectUrl: undefined,
      replicaUrls: [],
      apiKey: undefined,
      apiKeyPrevious: undefined,
      realtimeSigningSecret: undefined,
      realtimeUrl: undefined,
      realtimeAnonKey: undefined,
      supabaseServiceKey: undefined,
    });
    expect(config.environments.demo.hosts).toEqual(['demo.localhost']);
  });

  it('reads every variable of the contract', () => {
    const secret = 's'.repeat(32);
    const config = parseConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      SERVICE_NAME: 'Harbor Watch',
      DATA_DIR: ':memory:',
      PRODUCTION_HOSTS: 'API.Example.org, cases.example.org',
      DEMO_HOSTS: 'demo.example.org',
      PRODUCTION_DATABASE_URL: 'postgres://u:p@db:5432/prod',
      DEMO_DATABASE_URL: 'postgresql://u@db/demo',
      PRODUCTION_API_KEY: 'prod-key-0123456789',
      PRODUCTION_API_KEY_PREVIOUS: 'prod-key-old-0123456789',
      DEMO_API_KEY: 'demo-key-0123456789',
      PRODUCTION_REALTIME_SIGNING_SECRET: secret,
      DEMO_REALTIME_URL: 'https://abc.supabase.co',
      DEMO_REALTIME_ANON_KEY: 'anon',
      DEMO_SUPABASE_SERVICE_KEY: 'service',
      CHAT_OAUTH_CLIENT_ID: 'client',
      CHAT_OAUTH_CLIENT_SECRET: 'secret',
      CHAT_OAUTH_REDIRECT_URI: 'https://api.example.org/auth/chat/callback',
      CHAT_OAUTH_PROXY_URL: 'https://proxy.example.org/token',
      DASHBOARD_ORIGINS: 'https://dash.example.org, http://localhost:5173',
      TRAINING_ORIGINS: 'https://train.example.org',
      DEMO_ALLOWED_CHAT_IDS: '123456789012345678,42',
      GAME_RELAY_URLS: 'https://relay-a.example.org,https://relay-b.example.org',
      GAME_SERVER_KEY: 'game',
      LOG_LEVEL: 'WARN',
      TRUST_PROXY: 'true',
      QUEUE_STALE_TIMEOUT_SECONDS: '2.5',
      AUDIT_SEAL_INTERVAL_SECONDS: '0.5',
      DATABASE_POOL_SIZE: '16',
      PRODUCTION_DATABASE_DIRECT_URL: 'postgres://u:p@db-direct:5432/prod',
      DATABASE_PREPARED_STATEMENTS: 'false',
      PRODUCTION_DATABASE_REPLICA_URLS: 'postgres://u:p@replica-1:5432/prod, postgres://u:p@replica-2:5432/prod',
      REPLICA_MAX_LAG_SECONDS: '2.5',
      REALTIME_MAX_CONNECTIONS_PER_ADDRESS: '50',
      REALTIME_MAX_CONNECTIONS: '5000',
      SIGNIN_RATE_LIMIT_PER_MINUTE: '10',
      RETENTION_DAYS: '365',
    });
    expect(config.port).toBe(8080);
    expect(config.retentionDays).toBe(365);
    expect(config.environments.production.hosts).toEqual(['api.example.org', 'cases.example.org']);
    expect(config.environments.production.databaseUrl).toBe('postgres://u:p@db:5432/prod');
    expect(config.environments.production.realtimeSigningSecret).toBe(secret);
    expect(config.environments.production).toMatchObject({ apiKey: 'prod-key-0123456789', apiKeyPrevious: 'prod-key-old-0123456789' });
    expect(config.environments.demo).toMatchObject({ apiKey: 'demo-key-0123456789', apiKeyPrevious: undefined });
    expect(config.environments.demo).toMatchObject({ realtimeUrl: 'https://abc.supabase.co', realtimeAnonKey: 'anon', supabaseServiceKey: 'service' });
    expect(config.chatOAuth).toEqual({
      clientId: 'client',
      clientSecret: 'secret',
      redirectUri: 'https://api.example.org/auth/chat/callback',
      authorizeUrl: 'https://discord.com/oauth2/authorize',
      tokenUrl: 'https://discord.com/api/oauth2/token',
      userUrl: 'https://discord.com/api/users/@me',
      proxyUrl: 'https://proxy.example.org/token',
    });
    expect(config.dashboardOrigins).toEqual(['https://dash.example.org', 'http://localhost:5173']);
    expect(config.dashboardLoginUrl).toBe('https://dash.example.org/login');
    expect(config.demoAllowedChatIds).toEqual(['123456789012345678', '42']);
    expect(config.gameRelayUrls).toEqual(['https://relay-a.example.org', 'https://relay-b.example.org']);
    expect(config.logLevel).toBe('warn');
    expect(config.trustProxy).toBe(true);
    expect(config.queueStaleTimeoutMs).toBe(2500);
    expect(config.auditSealIntervalMs).toBe(500);
    expect(config.databasePoolSize).toBe(16);
    expect(config.environments.production.databaseDirectUrl).toBe('postgres://u:p@db-direct:5432/prod');
    expect(config.environments.demo.databaseDirectUrl).toBeUndefined();
    expect(config.databasePreparedStatements).toBe(false);
    expect(config.environments.production.replicaUrls).toEqual(['postgres://u:p@replica-1:5432/prod', 'postgres://u:p@replica-2:5432/prod']);
    expect(config.environments.demo.replicaUrls).toEqual([]);
    expect(config.replicaMaxLagMs).toBe(2500);
    expect(config).toMatchObject({ realtimeMaxConnectionsPerAddress: 50, realtimeMaxConnections: 5000, signinRateLimitPerMinute: 10 });
  });

  it('leaves OAuth unconfigured (not an error) while any of its three values is missing', () => {
    expect(parseConfig({ CHAT_OAUTH_CLIENT_ID: 'client', CHAT_OAUTH_CLIENT_SECRET: 'secret' }).chatOAuth).toBeUndefined();
  });

  it.each([
    [{ PORT: '70000' }, 'PORT: expected an integer from 0 to 65535 (got "70000")'],
    [{ PORT: '3000abc' }, 'PORT: expected an integer from 0 to 65535 (got "3000abc")'],
    [{ PRODUCTION_HOSTS: 'https://api.example.org' }, 'PRODUCTION_HOSTS: "https://api.example.org" is not a host name'],
    [{ DEMO_HOSTS: ' , ' }, 'DEMO_HOSTS: expected a comma-separated list'],
    [{ DEMO_DATABASE_URL: 'localhost:5432/db' }, 'DEMO_DATABASE_URL: expected a postgres:// connection URL'],
    [{ PRODUCTION_REALTIME_SIGNING_SECRET: 'short' }, 'PRODUCTION_REALTIME_SIGNING_SECRET: expected at least 32 characters'],
    [{ DASHBOARD_ORIGINS: 'https://dash.example.org/app' }, 'DASHBOARD_ORIGINS: "https://dash.example.org/app" is not a bare origin'],
    [{ TRAINING_ORIGINS: 'ftp://train.example.org' }, 'TRAINING_ORIGINS: expected an origin'],
    [{ DEMO_ALLOWED_CHAT_IDS: '123,abc' }, 'DEMO_ALLOWED_CHAT_IDS: "abc" is not a chat id'],
    [{ GAME_RELAY_URLS: 'relay.example.org' }, 'GAME_RELAY_URLS: expected an http(s) URL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL: expected one of fatal, error, warn, info, debug, trace, silent'],
    [{ QUEUE_STALE_TIMEOUT_SECONDS: '0' }, 'QUEUE_STALE_TIMEOUT_SECONDS: expected a number of seconds above 0, at most 86400'],
    [{ QUEUE_STALE_TIMEOUT_SECONDS: '-5' }, 'QUEUE_STALE_TIMEOUT_SECONDS: expected a number of seconds above 0'],
    [{ QUEUE_STALE_TIMEOUT_SECONDS: '10m' }, 'QUEUE_STALE_TIMEOUT_SECONDS: expected a number of seconds above 0'],
    [{ AUDIT_SEAL_INTERVAL_SECONDS: '5' }, 'AUDIT_SEAL_INTERVAL_SECONDS: expected a number of seconds from 0.1 to 4'],
    [{ RETENTION_DAYS: '0' }, 'RETENTION_DAYS: expected a whole number from 1 to 36500'],
    [{ RETENTION_DAYS: '30.5' }, 'RETENTION_DAYS: expected a whole number from 1 to 36500'],
    [{ RETENTION_DAYS: '-7' }, 'RETENTION_DAYS: expected a whole number from 1 to 36500'],
    [{ RETENTION_DAYS: 'a month' }, 'RETENTION_DAYS: expected a whole number from 1 to 36500'],
    [{ AUDIT_SEAL_INTERVAL_SECONDS: '0.05' }, 'AUDIT_SEAL_INTERVAL_SECONDS: expected a number of seconds from 0.1 to 4'],
    [{ DEMO_DATABASE_REPLICA_URLS: 'postgres://r:5432/demo' }, 'DEMO_DATABASE_REPLICA_URLS: set without DEMO_DATABASE_URL (replicas serve a PostgreSQL primary\'s reads)'],
    [{ PRODUCTION_DATABASE_URL: 'postgres://p:5432/db', PRODUCTION_DATABASE_REPLICA_URLS: 'replica:5432/db' }, 'PRODUCTION_DATABASE_REPLICA_URLS: expected a postgres:// connection URL'],
    [{ PRODUCTION_DATABASE_URL: 'postgres://p:5432/db', PRODUCTION_DATABASE_REPLICA_URLS: 'postgres://r:5432/db,postgres://p:5432/db' }, 'PRODUCTION_DATABASE_REPLICA_URLS: lists PRODUCTION_DATABASE_URL itself'],
    [{ REPLICA_MAX_LAG_SECONDS: '301' }, 'REPLICA_MAX_LAG_SECONDS: expected a number of seconds from 0.1 to 300'],
    [{ REPLICA_MAX_LAG_SECONDS: '0' }, 'REPLICA_MAX_LAG_SECONDS: expected a number of seconds from 0.1 to 300'],
    [{ DATABASE_POOL_SIZE: '0' }, 'DATABASE_POOL_SIZE: expected a whole number from 1 to 100'],
    [{ DEMO_DATABASE_DIRECT_URL: 'postgres://db:5432/demo' }, 'DEMO_DATABASE_DIRECT_URL: set without DEMO_DATABASE_URL (the direct connection is beside a pooler\'s URL)'],
    [{ PRODUCTION_DATABASE_URL: 'postgres://pooler:6432/db', PRODUCTION_DATABASE_DIRECT_URL: 'db:5432/db' }, 'PRODUCTION_DATABASE_DIRECT_URL: expected a postgres:// connection URL (got [redacted])'],
    [{ DATABASE_PREPARED_STATEMENTS: 'off' }, 'DATABASE_PREPARED_STATEMENTS: expected true or false (got "off")'],
    [{ DATABASE_PREPARED_STATEMENTS: 'TRUE' }, 'DATABASE_PREPARED_STATEMENTS: expected true or false (got "TRUE")'],
    [{ DATABASE_POOL_SIZE: 'many' }, 'DATABASE_POOL_SIZE: expected a whole number from 1 to 100'],
    [{ REALTIME_MAX_CONNECTIONS_PER_ADDRESS: '0' }, 'REALTIME_MAX_CONNECTIONS_PER_ADDRESS: expected a whole number from 1 to 1000000 (got "0")'],
    [{ REALTIME_MAX_CONNECTIONS: '20k' }, 'REALTIME_MAX_CONNECTIONS: expected a whole number from 1 to 1000000 (got "20k")'],
    [{ SIGNIN_RATE_LIMIT_PER_MINUTE: '2.5' }, 'SIGNIN_RATE_LIMIT_PER_MINUTE: expected a whole number from 1 to 1000000 (got "2.5")'],
    [{ TRUST_PROXY: 'maybe' }, 'TRUST_PROXY: expected true, false, or a list of proxy addresses/CIDRs'],
    [{ PRODUCTION_HOSTS: 'a.example.org', DEMO_HOSTS: 'A.example.org' }, 'PRODUCTION_HOSTS, DEMO_HOSTS: a.example.org listed in both'],
    [{ PRODUCTION_API_KEY: SAME, DEMO_API_KEY: SAME }, 'PRODUCTION_API_KEY, DEMO_API_KEY: each environment needs its own key'],
    [{ DEMO_API_KEY: 'short-key' }, 'DEMO_API_KEY: expected at least 16 characters (got "short-key")'],
    [{ PRODUCTION_API_KEY: OTHER, PRODUCTION_API_KEY_PREVIOUS: 'short-key' }, 'PRODUCTION_API_KEY_PREVIOUS: expected at least 16 characters (got "short-key")'],
    [{ PRODUCTION_API_KEY: SAME, PRODUCTION_API_KEY_PREVIOUS: SAME }, 'PRODUCTION_API_KEY, PRODUCTION_API_KEY_PREVIOUS: the previous key must differ from the current one'],
    [{ PRODUCTION_API_KEY: OTHER, PRODUCTION_API_KEY_PREVIOUS: SAME, DEMO_API_KEY: SAME }, 'PRODUCTION_API_KEY_PREVIOUS, DEMO_API_KEY: each environment needs its own key'],
    [{ PRODUCTION_API_KEY: OTHER, DEMO_API_KEY: SAME, DEMO_API_KEY_PREVIOUS: OTHER }, 'PRODUCTION_API_KEY, DEMO_API_KEY_PREVIOUS: each environment needs its own key'],
    [{ PRODUCTION_API_KEY: OTHER, PRODUCTION_API_KEY_PREVIOUS: SAME, DEMO_API_KEY: THIRD, DEMO_API_KEY_PREVIOUS: SAME }, 'PRODUCTION_API_KEY_PREVIOUS, DEMO_API_KEY_PREVIOUS: each environment needs its own key'],
    [{ DEMO_API_KEY_PREVIOUS: SAME }, 'DEMO_API_KEY_PREVIOUS: set only during a rotation, beside the new DEMO_API_KEY (which is unset)'],
    [{ BACKUP_DIR: '/b', BACKUP_INTERVAL_MINUTES: '0' }, 'BACKUP_INTERVAL_MINUTES: expected a number of minutes from 0.01 to 10080'],
    [{ BACKUP_DIR: '/b', BACKUP_INTERVAL_MINUTES: 'hourly' }, 'BACKUP_INTERVAL_MINUTES: expected a number of minutes from 0.01 to 10080'],
    [{ BACKUP_DIR: '/b', BACKUP_KEEP: '0' }, 'BACKUP_KEEP: expected a whole number from 1 to 1000'],
    [{ BACKUP_KEEP: '3' }, 'BACKUP_KEEP: set without BACKUP_DIR'],
  ])('%j stops the boot naming the variable', (env, message) => {
    expect(() => parseConfig(env)).toThrow(ConfigError);
    expect(() => parseConfig(env)).toThrow(message);
  });

  it('reports every problem at once', () => {
    const err = (() => {
      try {
        parseConfig({ PORT: 'x', LOG_LEVEL: 'y' });
      } catch (e) {
        return e as ConfigError;
      }
    })();
    expect(err?.problems).toHaveLength(2);
  });
});

describe('backups', () => {
  it('are off without BACKUP_DIR; 60 minutes and 7 kept by default; fractions of a minute allowed', () => {
    expect(parseConfig({}).backup).toBeUndefined();
    expect(parseConfig({ BACKUP_DIR: '/var/backups/cms' }).backup).toEqual({ dir: '/var/backups/cms', intervalMs: 3_600_000, keep: 7 });
    expect(parseConfig({ BACKUP_DIR: 'b', BACKUP_INTERVAL_MINUTES: '0.5', BACKUP_KEEP: '30' }).backup).toEqual({ dir: 'b', intervalMs: 30_000, keep: 30 });
  });
});

describe('loadConfig', () => {
  it('reads .env when present, with the real environment winning', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cms-env-'));
    try {
      const file = join(dir, '.env');
      await writeFile(file, 'PORT=4100\nSERVICE_NAME="From File"\n# a comment\nHOST=0.0.0.0\n');
      const config = loadConfig({ HOST: '127.0.0.2' }, file);
      expect(config).toMatchObject({ port: 4100, serviceName: 'From File', host: '127.0.0.2' });
      expect(loadConfig({}, join(dir, 'missing.env')).port).toBe(3000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
