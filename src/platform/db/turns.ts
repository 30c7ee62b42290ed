// Turns: the order in which the PostgreSQL adapter (postgres.ts) hands out its pool's connections.

/**
 * Turns at the pool's connections, one per connection, given to transactions before single
 * statements: when reads keep every connection busy, a change waits for the next connection to
 * come free rather than behind every read queued before it (pg's own queue is first come, first
 * served). A read still never waits while a connection is free.
 */
export class Turns {
  private free: number;
  private readonly changes: (() => void)[] = [];
  private readonly reads: (() => void)[] = [];

  constructor(size: number) {
    this.free = size;
  }

  take(change: boolean): Promise<void> | undefined {
    if (this.free > 0) {
      this.free--;
      return undefined;
    }
    return new Promise((resolve) => (change ? this.changes : this.reads).push(resolve));
  }

  give(): void {
    const next = this.changes.shift() ?? this.reads.shift();
    if (next) next();
    else this.free++;
  }

  get waiting(): { changes: number; reads: number } {
    return { changes: this.changes.length, reads: this.reads.length };
  }
}
