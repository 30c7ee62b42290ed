// The listener's variables: ports (PORT, METRICS_PORT), the proxies trusted for client addresses
// (TRUST_PROXY) and the log level (LOG_LEVEL).
import { parseList } from './values.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function parsePort(raw: string): number {
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) throw new Error('expected an integer from 0 to 65535');
  return port;
}

const TRUST_PROXY_EXPECTED = 'expected true, false, a hop count from 1 to 100, or a list of proxy addresses/CIDRs';

/**
 * Fastify's forms: `true` believes the left-most X-Forwarded-For (which a client writes itself: only
 * behind a proxy that replaces the header); a hop count (the proxies in front) or the proxies'
 * addresses believe only what those proxies appended, the safe choice (docs/configuration.md).
 */
export function parseTrustProxy(raw: string): boolean | number | string[] {
  if (raw === 'true' || raw === 'false') return raw === 'true';
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops < 1 || hops > 100) throw new Error(TRUST_PROXY_EXPECTED);
    return hops;
  }
  return parseList(raw, (v) => {
    if (!/^[0-9a-fA-F.:/]+$/.test(v)) throw new Error(TRUST_PROXY_EXPECTED);
    return v;
  });
}
