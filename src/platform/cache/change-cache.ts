// Results kept in memory until the data behind them changes. Correct only while every change
// clears it: a database trigger notifies a channel on commit and every instance listening clears
// (see Environments), and the instance that committed a transaction clears at once. While the
// listening connection is down nothing is kept; entries also lapse after `ttlMs`.
export class ChangeCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();
  private live = false;
  private generation = 0;

  constructor(
    private readonly ttlMs = 30_000,
    private readonly maxEntries = 1_000,
  ) {}

  /** Whether change notifications are being heard; while not, nothing is kept. */
  setLive(live: boolean): void {
    this.live = live;
    this.clear();
  }

  /** Take this before reading; store() refuses a read that a change overtook. */
  mark(): number {
    return this.generation;
  }

  get(key: string, now = Date.now()): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until > now) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  /** Keeps `value` for at most `ttlMs` (the cache's own lifetime by default). */
  store(key: string, value: V, mark: number, now = Date.now(), ttlMs = this.ttlMs): void {
    if (!this.live || mark !== this.generation) return;
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, { value, until: now + Math.min(ttlMs, this.ttlMs) });
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
