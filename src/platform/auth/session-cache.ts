// Resolved sessions kept in memory, so that a signed-in request costs no database round trip.
// Correct only while every change that could alter an answer clears it: database triggers notify
// `cms_auth_changed` with the agent's chat id on commit (migration 0003) and every instance
// listening drops that agent's entries; the instance that made a change also clears at once. While
// the listening connection is down, notifications can be missed, so the cache is off until it is
// back. Entries also lapse with their session and after a minute at most.
import type { SessionAgent } from './sessions.js';

export const AUTH_CHANNEL = 'cms_auth_changed';
const TTL_MS = 60_000;
const MAX_ENTRIES = 10_000;

interface Entry {
  session: SessionAgent;
  chatId: string;
  until: number;
}

export class SessionCache {
  private readonly byToken = new Map<string, Entry>();
  private readonly byAgent = new Map<string, Set<string>>();
  private live = false;
  private generation = 0;

  /** Whether notifications are being heard; while not, nothing is cached. */
  setLive(live: boolean): void {
    this.live = live;
    this.clear();
  }

  /** Take this before reading the database; store() refuses a read that an invalidation overtook. */
  mark(): number {
    return this.generation;
  }

  get(tokenHash: string, now = Date.now()): SessionAgent | undefined {
    const entry = this.byToken.get(tokenHash);
    if (!entry) return undefined;
    if (entry.until > now) return entry.session;
    this.remove(tokenHash, entry.chatId);
    return undefined;
  }

  store(tokenHash: string, session: SessionAgent, mark: number, now = Date.now()): void {
    if (!this.live || mark !== this.generation) return;
    if (this.byToken.size >= MAX_ENTRIES) {
      const oldest = this.byToken.keys().next().value as string;
      this.remove(oldest, this.byToken.get(oldest)!.chatId);
    }
    const chatId = session.agent.chat_id;
    this.byToken.set(tokenHash, { session, chatId, until: Math.min(now + TTL_MS, Date.parse(session.expiresAt)) });
    this.byAgent.set(chatId, (this.byAgent.get(chatId) ?? new Set()).add(tokenHash));
  }

  /** Drops everything cached for one agent (its sessions, its row, its allowlist flag). */
  invalidate(chatId: string): void {
    this.generation++;
    for (const tokenHash of this.byAgent.get(chatId) ?? []) this.byToken.delete(tokenHash);
    this.byAgent.delete(chatId);
  }

  clear(): void {
    this.generation++;
    this.byToken.clear();
    this.byAgent.clear();
  }

  get size(): number {
    return this.byToken.size;
  }

  private remove(tokenHash: string, chatId: string): void {
    this.byToken.delete(tokenHash);
    const tokens = this.byAgent.get(chatId);
    tokens?.delete(tokenHash);
    if (tokens?.size === 0) this.byAgent.delete(chatId);
  }
}
