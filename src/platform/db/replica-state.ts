// One streaming replica as this instance knows it (replicas.ts): its state, how the health answer and
// the metrics show it, and which failures take it out of serving.
import { describeConnectionUrl } from './connection-url.js';
import type { Db } from './types.js';

export type ReplicaState = 'ok' | 'lagging' | 'down' | 'not_in_recovery' | 'other_timeline' | 'starting';

/** Why a read went where it went (a metric's label). */
export type ReadRoute = 'replica' | 'primary_behind' | 'primary_unavailable' | 'primary_error';

/** One replica as the health answer and the metrics show it. */
export interface ReplicaStatus {
  /** host:port/database, without credentials. */
  name: string;
  state: ReplicaState;
  /** Seconds behind the primary (null until measured, or while down). */
  lag_s: number | null;
  replayed_lsn: string | null;
  paused: boolean;
  /** Reads this instance sent to it. */
  reads: number;
  last_error: string | null;
}

/** A replica URL as shown to operators: no user, no password (every host of a multi-host URL). */
export function replicaName(url: string): string {
  return describeConnectionUrl(url);
}

export interface Replica {
  readonly name: string;
  readonly db: Db;
  state: ReplicaState;
  replayed: bigint;
  paused: boolean;
  lagS: number | null;
  reads: number;
  lastError: string | null;
}

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** A failure of the connection rather than of the statement: the replica is not there. */
export function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  // No SQLSTATE: a socket error (ECONNREFUSED, a reset, a timeout); class 08: connection
  // exception; 57P01-57P03: the server shut down or is starting.
  if (typeof code !== 'string' || !SQLSTATE.test(code)) return true;
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03';
}
