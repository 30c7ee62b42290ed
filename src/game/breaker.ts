// A circuit breaker per game relay (issue 10): closed while the relay answers; open after
// `failureThreshold` consecutive failures, so a dead relay stops costing every lookup its timeout;
// half-open once `coolDownMs` has passed, letting exactly one probe through at a time: its success
// closes the breaker, its failure opens it for another cool-down. Small enough to read in one go,
// and precise about "consecutive" and "one probe", which percentage-window breakers are not.

export interface BreakerOptions {
  failureThreshold: number;
  coolDownMs: number;
}

export type BreakerState = 'closed' | 'open' | 'half-open';

export class CircuitBreaker {
  private failures = 0;
  private openedAt: number | undefined;
  private probing = false;

  constructor(private readonly options: BreakerOptions) {}

  state(now = Date.now()): BreakerState {
    if (this.openedAt === undefined) return 'closed';
    return now - this.openedAt >= this.options.coolDownMs ? 'half-open' : 'open';
  }

  /**
   * Whether a call may go out now. In half-open, the first caller becomes the probe and the
   * others are refused until it reports; the caller must then report success() or failure().
   */
  tryAcquire(now = Date.now()): boolean {
    const state = this.state(now);
    if (state === 'closed') return true;
    if (state === 'open' || this.probing) return false;
    this.probing = true;
    return true;
  }

  success(): void {
    this.failures = 0;
    this.openedAt = undefined;
    this.probing = false;
  }

  failure(now = Date.now()): void {
    this.failures++;
    if (this.probing || this.failures >= this.options.failureThreshold) this.openedAt = now;
    this.probing = false;
  }

  /** When the breaker lets a probe through next (for messages), or undefined when closed. */
  retryAt(): number | undefined {
    return this.openedAt === undefined ? undefined : this.openedAt + this.options.coolDownMs;
  }
}
