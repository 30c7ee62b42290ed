// Read-your-writes with replicas (issue 22; docs/postgresql.md): a request that may have changed
// something records its caller's position on the primary before its answer leaves, so that the
// caller's next request, on any instance, cannot overtake the change.
//
// Whether it may have changed something is decided by what it sent the primary, not by its
// answer's status: a change committed and then answered 5xx (an answer that could not be
// serialised, a commit the standby did not acknowledge) still records the position, and so does a
// replay of a kept answer (its first answer may have been lost before the position was recorded);
// a request that sent the primary nothing (a poll answered from memory, a body refused before its
// handler, a primary that could not be connected to) records none, and costs the primary no write.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { recordPosition } from '../db/replicas.js';
import { DbError, type Db } from '../db/types.js';
import type { Environment } from '../environments.js';
import { fromDbError } from '../errors.js';

const reached = new WeakSet<FastifyRequest>();

/** Failures to connect at all: the call never reached a server. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'EHOSTDOWN', 'ENETUNREACH', 'ENETDOWN']);

/** Whether a call that failed may have reached the server: anything but a refused connection. */
const mayHaveReached = (err: unknown): boolean => !(err instanceof DbError && NOT_CONNECTED.has(err.code ?? ''));

/** The environment as the request sees it: every call of its primary that may have reached the server noted. */
export function notingPrimaryCalls(request: FastifyRequest, environment: Environment): Environment {
  const primary = environment.db;
  const noted = <T>(call: Promise<T>): Promise<T> =>
    call.then(
      (value) => {
        reached.add(request);
        return value;
      },
      (err: unknown) => {
        if (mayHaveReached(err)) reached.add(request);
        throw err;
      },
    );
  const db: Db = {
    ...primary,
    query: (text, values, options) => noted(primary.query(text, values, options)),
    exec: (sql) => noted(primary.exec(sql)),
    transaction: (fn) => noted(primary.transaction(fn)),
    direct: (fn) => noted(primary.direct(fn)),
  };
  return Object.create(environment, { db: { value: db, enumerable: true } }) as Environment;
}

/** onSend: the caller's position recorded when the request reached the primary. */
export async function recordReadPosition(request: FastifyRequest, caller: string, primary: Db, log: FastifyBaseLogger): Promise<void> {
  if (!reached.has(request)) return;
  try {
    await recordPosition(primary, caller);
  } catch (err) {
    // The change is made; without its position the caller's next reads may come from a replica
    // that has not replayed it yet, for as long as that replica lags. A primary that cannot be
    // reached is logged once as an outage (error-handler.ts), not once per request here.
    const unreachable = err instanceof DbError && fromDbError(err).statusCode === 503;
    log[unreachable ? 'debug' : 'error']({ request_id: request.id, err, caller: caller.split(':')[0] }, 'read position not recorded');
  }
}
