/** The nearest-rank `q`-quantile (0 < q <= 1) of `sorted` (ascending); NaN when it is empty. */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.max(0, Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1))]!;
}
