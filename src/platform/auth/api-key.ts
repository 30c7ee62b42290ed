import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Whole-header comparison in constant time. Both sides are hashed first so that neither the
 * content nor the length of the configured key leaks through timing.
 */
export function apiKeyMatches(presented: string, configured: string | undefined): boolean {
  if (configured === undefined) return false;
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(configured).digest();
  return timingSafeEqual(a, b);
}
