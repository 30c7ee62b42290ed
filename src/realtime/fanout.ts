// Broadcasts across instances (issue 12): the Broadcaster of the built-in hub publishes each
// request's messages with one NOTIFY in the change's own transaction (sent when it commits), and every instance, this one
// included, hears it on the listening connection it already keeps and hands the messages to its
// hub. A payload over NOTIFY's limit travels by reference through realtime_outbox. On PGlite the
// same statements run in process. Best-effort: an instance whose listening connection is down
// misses what is sent meanwhile; clients reconcile through the GET endpoints.
import type { Logger } from 'pino';
import type { EnvironmentName } from '../config.js';
import type { Db, Queryable, Tx } from '../platform/db/types.js';
import { REALTIME_CHANNEL, type Environments } from '../platform/environments.js';
import type { BroadcastMessage, Broadcaster } from '../training/broadcaster.js';
import type { RealtimeHub } from './hub.js';

/** NOTIFY payloads are limited to 8000 bytes; below this many bytes a batch travels inline. */
export const INLINE_PAYLOAD_BYTES = 7900;
const OUTBOX_RETENTION = '10 minutes';

interface Wire {
  /** topic, event, payload */
  m?: [string, string, unknown][];
  /** An outbox row holding the messages. */
  ref?: number;
}

export class NotifyBroadcaster implements Broadcaster {
  constructor(private readonly environments: Environments) {}

  async send(environment: EnvironmentName, messages: readonly BroadcastMessage[]): Promise<void> {
    const db = this.environments.get(environment)?.db;
    if (!db) throw new Error(`environment ${environment} is unavailable`);
    await publish(db, messages);
  }

  /** In the change's transaction: PostgreSQL delivers the notification when it commits, and never on a rollback. */
  async sendOnCommit(tx: Tx, _environment: EnvironmentName, messages: readonly BroadcastMessage[]): Promise<void> {
    await publish(tx, messages);
  }
}

async function publish(db: Queryable, messages: readonly BroadcastMessage[]): Promise<void> {
  const batch = messages.map((m): [string, string, unknown] => [m.topic, m.event, m.payload]);
  const inline = JSON.stringify({ m: batch } satisfies Wire);
  if (Buffer.byteLength(inline) <= INLINE_PAYLOAD_BYTES) {
    await db.query('select pg_notify($1::text, $2::text)', [REALTIME_CHANNEL, inline], { name: 'realtime_notify' });
    return;
  }
  // Stored and referenced in one statement; rows older than the retention go in the same breath.
  await db.query(
    `with pruned as (delete from realtime_outbox where created_at < now() - interval '${OUTBOX_RETENTION}'),
          stored as (insert into realtime_outbox (messages) values ($2::jsonb) returning id)
     select pg_notify($1::text, json_build_object('ref', id)::text) from stored`,
    [REALTIME_CHANNEL, JSON.stringify(batch)],
  );
}

/** Hands every environment's realtime notifications to the hub. */
export function deliverNotifications(environments: Environments, hub: RealtimeHub, log: Logger): void {
  const deliver = (environment: EnvironmentName, messages: [string, string, unknown][]) => {
    for (const [topic, event, payload] of messages) hub.deliver(environment, topic.replace(/^realtime:/, ''), event, JSON.stringify(payload));
  };
  environments.onRealtime((environment: EnvironmentName, db: Db, payload: string) => {
    let wire: Wire;
    try {
      wire = JSON.parse(payload) as Wire;
    } catch (err) {
      return log.warn({ err, environment }, 'realtime notification is not JSON; dropped');
    }
    if (wire.m) return deliver(environment, wire.m);
    if (typeof wire.ref !== 'number') return;
    db.query<{ messages: [string, string, unknown][] }>('select messages from realtime_outbox where id = $1::bigint', [wire.ref])
      .then(({ rows }) => {
        if (rows[0]) deliver(environment, rows[0].messages);
        else log.warn({ environment, ref: wire.ref }, 'realtime outbox row missing; broadcast dropped');
      })
      .catch((err: unknown) => log.warn({ err, environment, ref: wire.ref }, 'realtime outbox read failed; broadcast dropped'));
  });
}
