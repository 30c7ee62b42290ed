// Waiting on work that may never finish (a hung database), without being held by it.

/** `work`'s result, or undefined when it fails or is not done in `ms` (it then finishes on its own, ignored). */
export async function withinDeadline<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), Math.max(0, ms))));
  try {
    return await Promise.race([work.catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}
