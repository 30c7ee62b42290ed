// Queue drains of two sides set against each other (HTTP and the raw loop, a build and its
// baseline, direct and through a pooler) in alternating rounds, A B B A, so that neither side gets
// the emptier tables or the quieter minute.
import type { FleetResult } from './bot-fleet.js';

/** What a drain did, or a side's drains added up. */
export interface Drained {
  completed: number;
  elapsedMs: number;
  claimLatencies: number[];
}

export const drainedBy = (fleet: FleetResult): Drained => ({ completed: fleet.completed.size, elapsedMs: fleet.elapsedMs, claimLatencies: fleet.claimLatencies });

/** Items completed per second. */
export const drainRate = (d: Drained): number => d.completed / (d.elapsedMs / 1000);

/** A B B A, `times` over. */
export const abba = <S>(a: S, b: S, times: number): S[] => Array.from({ length: times }, () => [a, b, b, a]).flat();

/** Runs `drain` for each side of `order` in turn (`round` is its index there), adding up each side's. */
export async function alternateDrains<S extends string>(order: readonly S[], drain: (side: S, round: number) => Promise<Drained>): Promise<Record<S, Drained>> {
  const sides = {} as Record<S, Drained>;
  for (const [round, side] of order.entries()) {
    const done = await drain(side, round);
    const sum = (sides[side] ??= { completed: 0, elapsedMs: 0, claimLatencies: [] });
    sum.completed += done.completed;
    sum.elapsedMs += done.elapsedMs;
    sum.claimLatencies.push(...done.claimLatencies);
  }
  return sides;
}
