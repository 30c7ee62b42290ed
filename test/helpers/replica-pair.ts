// The streaming replica pair the replica tests use: scripts/replica-clusters.sh brings it up (primary
// on 5441, replica on 5442; .ci/run runs it first). Tests run whenever the replica answers; with
// REPLICA_TESTS_REQUIRED=1 (CI) they fail instead of skipping when it does not.
import pg from 'pg';

export const PRIMARY = process.env.REPLICA_TEST_PRIMARY_URL ?? 'postgres://root@127.0.0.1:5441/postgres';
export const REPLICA = process.env.REPLICA_TEST_URL ?? 'postgres://root@127.0.0.1:5442/postgres';
export const CLUSTER = process.env.REPLICA_TEST_CLUSTER ?? 'cms_replica';

export async function sql<R extends pg.QueryResultRow = Record<string, any>>(url: string, text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

export async function replicaAnswers(): Promise<boolean> {
  try {
    const [row] = await sql(REPLICA, 'select pg_is_in_recovery() as recovery');
    return row?.recovery === true;
  } catch {
    return false;
  }
}

export const available = await replicaAnswers();
if (!available && process.env.REPLICA_TESTS_REQUIRED === '1') {
  throw new Error(`REPLICA_TESTS_REQUIRED=1 but no streaming replica answers at ${REPLICA}: run scripts/replica-clusters.sh`);
}

export const withDatabase = (url: string, database: string) => {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
};

export async function until(what: string, check: () => Promise<boolean> | boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

