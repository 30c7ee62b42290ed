/**
 * The rank at floor(q * n) of `values`, unsorted (0 when empty): the queue, training and realtime
 * figures' percentile since they were first measured, kept so that their runs compare.
 */
export function percentile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}

/** The nearest-rank `q`-quantile (0 < q <= 1) of `sorted` (ascending); NaN when it is empty. */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.max(0, Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1))]!;
}
