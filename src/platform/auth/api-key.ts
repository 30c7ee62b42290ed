// The bot's key for one environment, and during a rotation its previous key beside it
// (<ENV>_API_KEY_PREVIOUS): both accepted with the same permissions; uses of the previous one are
// counted (for the metrics) and logged at most once a minute, so the operator sees when the bot
// has switched and the old key can go.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { EnvironmentConfig } from '../../config.js';

/** At most one warning per environment per this long about the previous key being used. */
export const PREVIOUS_KEY_LOG_INTERVAL_MS = 60_000;

const sha256 = (value: string) => createHash('sha256').update(value).digest();
// Compared against when a key is not configured, so the work done never depends on the config.
const UNSET = sha256('');

export class ApiKeys {
  private readonly current: Buffer | undefined;
  private readonly previous: Buffer | undefined;
  private readonly previousVariable: string;
  private uses = 0;
  private unlogged = 0;
  private lastLoggedAt = -Infinity;

  constructor(
    private readonly env: Pick<EnvironmentConfig, 'name' | 'apiKey' | 'apiKeyPrevious'>,
    private readonly log: FastifyBaseLogger,
    private readonly now: () => number = () => Date.now(),
  ) {
    this.current = env.apiKey === undefined ? undefined : sha256(env.apiKey);
    this.previous = env.apiKeyPrevious === undefined ? undefined : sha256(env.apiKeyPrevious);
    this.previousVariable = `${env.name.toUpperCase()}_API_KEY_PREVIOUS`;
  }

  /** Requests this instance authenticated with the previous key since it started. */
  get previousKeyUses(): number {
    return this.uses;
  }

  /**
   * Whether `presented` (the whole Authorization header) is the current or the previous key. Each
   * side is hashed first, so neither the content nor the length of a configured key leaks. Both
   * comparisons always run, in constant time, whichever matches and whichever is configured: the
   * timing says nothing about which key was presented or whether a rotation is under way.
   */
  matches(presented: string): boolean {
    const hash = sha256(presented);
    const current = timingSafeEqual(hash, this.current ?? UNSET) && this.current !== undefined;
    const previous = timingSafeEqual(hash, this.previous ?? UNSET) && this.previous !== undefined;
    if (previous) this.countPrevious();
    return current || previous;
  }

  private countPrevious(): void {
    this.uses++;
    this.unlogged++;
    const now = this.now();
    if (now - this.lastLoggedAt < PREVIOUS_KEY_LOG_INTERVAL_MS) return;
    this.log.warn(
      { environment: this.env.name, count: this.unlogged, total: this.uses },
      `request authenticated with ${this.previousVariable}; unset it once the bot uses the new key`,
    );
    this.unlogged = 0;
    this.lastLoggedAt = now;
  }
}
