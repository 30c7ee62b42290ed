// The two environments and what each one is configured with (the <ENV>_* variables), and the host
// names that resolve to each (PRODUCTION_HOSTS, DEMO_HOSTS).
import { parseList } from './values.js';

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
  /** The secret of erased people's pseudonyms (<ENV>_PSEUDONYM_KEY); unset: admin/subjects/subject-key.ts decides. */
  pseudonymKey: string | undefined;
  realtimeUrl: string | undefined;
  realtimeAnonKey: string | undefined;
  supabaseServiceKey: string | undefined;
}

const HOSTNAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

export function parseHosts(raw: string): string[] {
  return parseList(raw, (item) => {
    const host = item.toLowerCase();
    if (!HOSTNAME.test(host)) throw new Error(`"${item}" is not a host name (no scheme, port or path)`);
    return host;
  });
}
