// The database variables: connection URLs (one host or libpq's several, a pooler's direct URL,
// replicas), the pool's size and the replicas' allowed lag, and how an environment's URLs must agree.
import { parseConnectionUrl } from '../platform/db/connection-url.js';
import type { EnvironmentConfig } from './environments.js';

/** One host, or libpq's several (`postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write`). */
export function parsePostgresUrl(raw: string): string {
  parseConnectionUrl(raw);
  return raw;
}

/**
 * A comma list of connection URLs, each of which may itself list hosts with commas (libpq's
 * multi-host form): a new URL starts only where a comma is followed by a scheme.
 */
export function parsePostgresUrls(raw: string): string[] {
  const items = raw.split(/,(?=\s*postgres(?:ql)?:\/\/)/).map((s) => s.trim()).filter((s) => s !== '');
  if (items.length === 0) throw new Error('expected a comma-separated list');
  return items.map(parsePostgresUrl);
}

export function parsePoolSize(raw: string): number {
  const size = Number(raw);
  if (!/^\d+$/.test(raw) || size < 1 || size > 100) throw new Error('expected a whole number from 1 to 100');
  return size;
}

/** Read positions are kept 15 minutes (read-positions.ts): a replica may not lag longer than that and serve. */
export function parseReplicaLag(raw: string): number {
  const seconds = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || seconds < 0.1 || seconds > 300) throw new Error('expected a number of seconds from 0.1 to 300');
  return seconds;
}

/** A direct URL or replicas stand beside a PostgreSQL URL of the same environment, never alone or as it. */
export function databaseProblems(environments: Iterable<EnvironmentConfig>): string[] {
  const problems: string[] = [];
  for (const { name, databaseUrl, databaseDirectUrl, replicaUrls } of environments) {
    const prefix = name.toUpperCase();
    if (databaseDirectUrl !== undefined && databaseUrl === undefined) problems.push(`${prefix}_DATABASE_DIRECT_URL: set without ${prefix}_DATABASE_URL (the direct connection is beside a pooler's URL)`);
    // Replicas copy a PostgreSQL primary; the embedded store has none to copy.
    if (replicaUrls.length > 0 && databaseUrl === undefined) problems.push(`${prefix}_DATABASE_REPLICA_URLS: set without ${prefix}_DATABASE_URL (replicas serve a PostgreSQL primary's reads)`);
    if (databaseUrl !== undefined && replicaUrls.includes(databaseUrl)) problems.push(`${prefix}_DATABASE_REPLICA_URLS: lists ${prefix}_DATABASE_URL itself`);
  }
  return problems;
}
