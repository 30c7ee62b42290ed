// Work that must follow its change's commit: this instance's caches cleared (sessions, idle
// queues), a broadcast that cannot ride the transaction. A request with an Idempotency-Key runs in
// one transaction with its answer (src/platform/http/idempotency.ts), and a handler's
// `db.transaction` resolves before that commit: there the work waits for it (and is dropped if the
// request is rolled back). Everywhere else it runs at once, as it always did.

const QUEUE = Symbol('after commit');

/** What a keyed request's environment carries: the work to run once its transaction commits. */
export interface AfterCommitQueue {
  [QUEUE]: (() => unknown)[];
}

export function newAfterCommitQueue(): AfterCommitQueue {
  return { [QUEUE]: [] };
}

/** Runs `fn` now, or once the request's transaction commits when `environment` is a keyed request's. */
export async function afterCommit(environment: object, fn: () => unknown): Promise<void> {
  const queue = (environment as Partial<AfterCommitQueue>)[QUEUE];
  if (queue) queue.push(fn);
  else await fn();
}

/** The queued work, after the commit: each in turn, a failure passed to `onError` and the rest run. */
export async function runAfterCommit(queue: AfterCommitQueue, onError: (err: unknown) => void): Promise<void> {
  for (const fn of queue[QUEUE].splice(0)) {
    try {
      await fn();
    } catch (err) {
      onError(err);
    }
  }
}

export const afterCommitProperty = (queue: AfterCommitQueue): PropertyDescriptorMap => ({ [QUEUE]: { value: queue[QUEUE], enumerable: false } });
