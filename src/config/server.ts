// The listener's variables: ports (PORT, METRICS_PORT), the proxies trusted for client addresses
// (TRUST_PROXY) and the log level (LOG_LEVEL).
import { parseList } from './values.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function parsePort(raw: string): number {
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) throw new Error('expected an integer from 0 to 65535');
  return port;
}

/**
 * `true` believes the left-most X-Forwarded-For, which a client writes itself (only behind a proxy
 * that replaces the header); the proxies' addresses or CIDRs believe only what they appended, the
 * safe setting. A hop count is refused, as Fastify trusts nothing for one: it cannot tell a proxy
 * from a client that reaches the service directly.
 */
export function parseTrustProxy(raw: string): boolean | string[] {
  if (raw === 'true' || raw === 'false') return raw === 'true';
  if (/^\d+$/.test(raw)) throw new Error("expected true, false, or a list of proxy addresses/CIDRs (a hop count is not taken: list the proxies' addresses)");
  return parseList(raw, (v) => {
    // An address has a dot (IPv4) or a colon (IPv6): a bare number in a list is a hop count too,
    // which proxy-addr would take as the address 0.0.0.<n> and so trust nothing, silently.
    if (!/^[0-9a-fA-F.:/]+$/.test(v) || !/[.:]/.test(v)) throw new Error("expected true, false, or a list of proxy addresses/CIDRs (a hop count is not taken: list the proxies' addresses)");
    return v;
  });
}
