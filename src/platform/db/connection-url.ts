// libpq's multi-host connection URLs (issue 30): `postgres://u@h1:5432,h2:5432/db?
// target_session_attrs=read-write`. `pg` knows one host per URL, so the URL is taken apart here
// into one single-host URL per host (what `pg` connects with, credentials and parameters kept), the
// kind of server wanted, and a name without credentials for logs and the health answer. Pure: no
// I/O, unit-tested in test/connection-url.test.ts.

/**
 * libpq's values: any server; one that accepts writes (`read-write`: `transaction_read_only` off)
 * or is not in recovery (`primary`); one that does not accept writes (`read-only`) or is in
 * recovery (`standby`). libpq's `prefer-standby` is not offered: it needs two passes over the
 * hosts, and the replica URLs that would use it are skipped by the service when not in recovery.
 */
export const SESSION_ATTRS = ['any', 'read-write', 'primary', 'read-only', 'standby'] as const;
export type SessionAttrs = (typeof SESSION_ATTRS)[number];

export interface DbHost {
  host: string;
  port: number;
}

export interface ConnectionTarget {
  hosts: DbHost[];
  attrs: SessionAttrs;
  /** One single-host URL per host, in the URL's order; `target_session_attrs` taken out. */
  urls: string[];
  /** `h1:5432,h2:5432/db`: no user, no password, no parameters. */
  name: string;
}

const URL_SHAPE = /^(postgres(?:ql)?:\/\/)([^/?#]*)(.*)$/s;
const PORT = /^\d{1,5}$/;

function parseHost(text: string): DbHost {
  let host = text;
  let port = '5432';
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    if (end < 0) throw new Error(`"${text}" is not a host (an IPv6 address needs its closing bracket)`);
    host = text.slice(0, end + 1);
    const rest = text.slice(end + 1);
    if (rest !== '') {
      if (!rest.startsWith(':')) throw new Error(`"${text}" is not host:port`);
      port = rest.slice(1);
    }
  } else {
    const colon = text.lastIndexOf(':');
    if (colon >= 0) {
      host = text.slice(0, colon);
      port = text.slice(colon + 1);
    }
  }
  if (host === '') throw new Error(`"${text}" names no host`);
  if (!PORT.test(port) || Number(port) < 1 || Number(port) > 65535) throw new Error(`"${text}": the port must be a number from 1 to 65535`);
  return { host, port: Number(port) };
}

/** Takes a connection URL apart; throws a message fit for the boot's report (never the password). */
export function parseConnectionUrl(raw: string): ConnectionTarget {
  const shape = URL_SHAPE.exec(raw);
  if (!shape) throw new Error('expected a postgres:// connection URL');
  const [, scheme, authority, rest] = shape as unknown as [string, string, string, string];
  const at = authority.lastIndexOf('@');
  const userinfo = at >= 0 ? authority.slice(0, at + 1) : '';
  const hostList = authority.slice(at + 1);
  const query = rest.indexOf('?');
  const params = new URLSearchParams(query >= 0 ? rest.slice(query + 1).split('#')[0] : '');
  const attrsText = params.get('target_session_attrs') ?? 'any';
  if (!(SESSION_ATTRS as readonly string[]).includes(attrsText)) {
    throw new Error(`target_session_attrs: expected one of ${SESSION_ATTRS.join(', ')}`);
  }
  params.delete('target_session_attrs');
  const path = query >= 0 ? rest.slice(0, query) : rest.split('#')[0]!;
  const search = params.toString() === '' ? '' : `?${params.toString()}`;
  const single = !hostList.includes(',');
  // One host: the URL as given (an empty host, a socket path: whatever `pg` made of it before).
  const hosts = single && hostList === '' ? [] : hostList.split(',').map(parseHost);
  const urls = single && !raw.includes('target_session_attrs')
    ? [raw]
    : (hosts.length === 0 ? [''] : hosts.map((h) => `${h.host}:${h.port}`)).map((hostPort) => `${scheme}${userinfo}${hostPort}${path}${search}`);
  for (const url of urls) {
    try {
      new URL(url);
    } catch {
      throw new Error('expected a postgres:// connection URL');
    }
  }
  const database = path.split('#')[0] || '/';
  const name = `${hosts.map((h) => `${h.host}:${h.port}`).join(',') || 'localhost'}${database}`;
  return { hosts, attrs: attrsText as SessionAttrs, urls, name };
}

/**
 * A connection URL as logs may show it: `h1:5432,h2:5432/db`. A malformed one is shown by its
 * hosts and path as written, unless a stray `@` past them could be part of a password: then `[redacted]`.
 */
export function describeConnectionUrl(raw: string): string {
  try {
    return parseConnectionUrl(raw).name;
  } catch {
    const shape = URL_SHAPE.exec(raw);
    if (!shape || shape[3]!.includes('@')) return '[redacted]';
    const authority = shape[2]!;
    return `${authority.slice(authority.lastIndexOf('@') + 1)}${shape[3]!.split(/[?#]/)[0]}`;
  }
}

/**
 * The order in which a new connection tries the hosts: the one last found suitable first (a pool
 * does not pay for a refused or read-only host on every new connection after a failover), then
 * the others in the URL's order; after that host fails, the URL's order from the first, as libpq.
 * A host that could not be reached within the last `skipMs` (refused, timed out, hung) comes last:
 * one that does not answer costs a whole connect timeout each time it is tried first.
 */
export class HostOrder {
  private preferred: number | undefined;
  private readonly failedAt = new Map<number, number>();

  constructor(
    private readonly count: number,
    private readonly skipMs = 10_000,
  ) {}

  /** Hosts to try, by index, for one new connection. */
  walk(): number[] {
    const all = Array.from({ length: this.count }, (_, i) => i);
    const ordered = this.preferred === undefined ? all : [this.preferred, ...all.filter((i) => i !== this.preferred)];
    const now = Date.now();
    const skipped = (i: number) => now - (this.failedAt.get(i) ?? -Infinity) < this.skipMs;
    return [...ordered.filter((i) => !skipped(i)), ...ordered.filter(skipped)];
  }

  /** A connection to this host proved suitable. */
  found(index: number): void {
    this.preferred = index;
    this.failedAt.delete(index);
  }

  /**
   * This host refused, failed or turned out unsuitable: the next walk starts from the first host;
   * `unanswered` (it could not be reached, or stopped answering), with this one last.
   */
  lost(index: number, unanswered = false): void {
    if (this.preferred === index) this.preferred = undefined;
    if (unanswered) this.failedAt.set(index, Date.now());
  }

  get current(): number | undefined {
    return this.preferred;
  }
}
