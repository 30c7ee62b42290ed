// How many realtime sockets one client address, and this instance, may hold open (issue 28:
// REALTIME_MAX_CONNECTIONS_PER_ADDRESS, REALTIME_MAX_CONNECTIONS). Checked before the upgrade
// (routes.ts), so a refused client gets an HTTP status in the envelope rather than a socket
// accepted and closed at once. A slot is held from the check until the TCP socket closes, whether
// or not the upgrade went through, so nothing can leak between the check and the hub.
import type { Socket } from 'node:net';
import { normalizeIP } from '@fastify/rate-limit';
import { errors, type AppError } from '../platform/errors.js';

export interface CapsLimits {
  perAddress: number;
  total: number;
}

export class ConnectionCaps {
  private readonly held = new Map<string, number>();
  private total = 0;

  constructor(private readonly limits: CapsLimits) {}

  /**
   * Takes a slot for `ip` (request.ip: TRUST_PROXY decides it; IPv6 counts by its /64, as the
   * sign-in limit does) until `socket` closes; the refusal to answer when none is left.
   */
  admit(ip: string, socket: Socket): AppError | undefined {
    if (this.total >= this.limits.total) return errors.realtimeAtCapacity();
    const address = normalizeIP(ip);
    const held = this.held.get(address) ?? 0;
    if (held >= this.limits.perAddress) return errors.tooManyConnections(this.limits.perAddress);
    this.total++;
    this.held.set(address, held + 1);
    socket.once('close', () => this.release(address));
    return undefined;
  }

  /** Sockets holding a slot, and the addresses they come from. */
  stats(): { connections: number; addresses: number } {
    return { connections: this.total, addresses: this.held.size };
  }

  private release(address: string): void {
    this.total--;
    const held = (this.held.get(address) ?? 1) - 1;
    if (held > 0) this.held.set(address, held);
    else this.held.delete(address);
  }
}
