// The series of the environments beside their databases' (src/platform/db/observe.ts): the uses of
// each previous API key, the read replicas' lag and state and where reads went, and when each
// backed-up environment last had a good backup. Registered once, read at scrape time.
import { ENVIRONMENTS, type EnvironmentName } from '../config.js';
import type { ApiKeys } from './auth/api-key.js';
import type { BackupScheduler } from './backup/scheduler.js';
import { observeDatabases, type DbObservation } from './db/observe.js';
import type { ReplicaSet } from './db/replicas.js';
import type { Db } from './db/types.js';
import type { Metrics } from './metrics.js';

/** What the series read, held by Environments. */
export interface EnvironmentSources {
  /** The open environments. */
  ready: () => Iterable<{ readonly name: EnvironmentName; readonly db: Db }>;
  keys: Record<EnvironmentName, ApiKeys>;
  replicaSets: ReadonlyMap<EnvironmentName, ReplicaSet>;
  backups: BackupScheduler | undefined;
}

/** Registers the series; returns each environment's database observation when metrics are enabled. */
export function observeEnvironments(metrics: Metrics, sources: EnvironmentSources): ((environment: string) => DbObservation) | undefined {
  metrics.bindEnvironments(sources.ready);
  metrics.counterFrom(
    'cms_api_key_previous_uses_total',
    'Requests this instance authenticated with <ENV>_API_KEY_PREVIOUS, per environment (a key rotation is over when it stops growing)',
    () => ENVIRONMENTS.map((environment) => ({ labels: { environment }, value: sources.keys[environment].previousKeyUses })),
    ['environment'],
  );
  const observation = metrics.enabled ? observeDatabases(metrics, sources.ready) : undefined;
  // Read replicas (issue 22): each one's lag and whether it serves, and where the reads went.
  metrics.gauge('cms_db_replica_lag_seconds', 'Seconds since the primary was last at a position the replica has replayed, per environment and replica (absent while down)', ['environment', 'replica'], (gauge) => {
    gauge.reset();
    for (const [environment, set] of sources.replicaSets) for (const r of set.status()) if (r.lag_s !== null) gauge.set({ environment, replica: r.name }, r.lag_s);
  });
  metrics.gauge('cms_db_replica_serving', 'Whether the replica serves reads (1) or is skipped: down, lagging or not in recovery (0), per environment and replica', ['environment', 'replica'], (gauge) => {
    gauge.reset();
    for (const [environment, set] of sources.replicaSets) for (const r of set.status()) gauge.set({ environment, replica: r.name }, r.state === 'ok' ? 1 : 0);
  });
  metrics.counterFrom(
    'cms_db_reads_total',
    'Reads that tolerate replication, by where they went: a replica, or the primary because no replica had replayed the caller\'s last change in time (behind), none was serving (unavailable) or the replica failed (error)',
    () => [...sources.replicaSets].flatMap(([environment, set]) => Object.entries(set.routed).map(([route, value]) => ({ labels: { environment, route }, value }))),
    ['environment', 'route'],
  );
  // An environment the service backs up has a series from the start (0 until the first good
  // backup), so an alert on its age also fires when none has ever succeeded.
  metrics.gauge('cms_backup_last_success_timestamp_seconds', 'When this instance last wrote a good backup of the environment (Unix time; 0: none yet), per environment it backs up', ['environment'], (gauge) => {
    gauge.reset();
    for (const environment of ENVIRONMENTS) {
      const status = sources.backups?.status(environment);
      if (status) gauge.set({ environment }, (status.lastGoodAt?.getTime() ?? 0) / 1000);
    }
  });
  return observation;
}
