// libpq's multi-host connection URLs (issue 30): how one is taken apart into what `pg` connects
// with, how it is named in logs, how the config takes it, and the order new connections try the
// hosts in. Pure: no database.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../src/config.js';
import { describeConnectionUrl, HostOrder, parseConnectionUrl } from '../src/platform/db/connection-url.js';
import { toDbError } from '../src/platform/db/host-choice.js';
import { fromDbError } from '../src/platform/errors.js';
import { DbError } from '../src/platform/db/types.js';

describe('parseConnectionUrl', () => {
  it('keeps a single-host URL as it is, for pg to parse as before', () => {
    const raw = 'postgres://u:p%40ss@db.internal:6432/prod?sslmode=require&application_name=x';
    expect(parseConnectionUrl(raw)).toEqual({ hosts: [{ host: 'db.internal', port: 6432 }], attrs: 'any', urls: [raw], name: 'db.internal:6432/prod' });
    expect(parseConnectionUrl('postgresql://u@db/demo')).toMatchObject({ hosts: [{ host: 'db', port: 5432 }], urls: ['postgresql://u@db/demo'], name: 'db:5432/demo' });
  });

  it('takes several hosts apart into one URL per host, in order, credentials and parameters kept, target_session_attrs taken out', () => {
    const target = parseConnectionUrl('postgres://app:s3cret@h1:5432,h2:5433,h3/cms?target_session_attrs=read-write&connect_timeout=2');
    expect(target.attrs).toBe('read-write');
    expect(target.hosts).toEqual([
      { host: 'h1', port: 5432 },
      { host: 'h2', port: 5433 },
      { host: 'h3', port: 5432 },
    ]);
    expect(target.urls).toEqual([
      'postgres://app:s3cret@h1:5432/cms?connect_timeout=2',
      'postgres://app:s3cret@h2:5433/cms?connect_timeout=2',
      'postgres://app:s3cret@h3:5432/cms?connect_timeout=2',
    ]);
    expect(target.name).toBe('h1:5432,h2:5433,h3:5432/cms');
  });

  it('accepts every kind libpq names but prefer-standby, and IPv6 hosts in brackets', () => {
    for (const attrs of ['any', 'read-write', 'primary', 'read-only', 'standby'] as const) {
      expect(parseConnectionUrl(`postgres://u@a,b/db?target_session_attrs=${attrs}`).attrs).toBe(attrs);
    }
    expect(() => parseConnectionUrl('postgres://u@a,b/db?target_session_attrs=prefer-standby')).toThrow('target_session_attrs: expected one of any, read-write, primary, read-only, standby');
    const v6 = parseConnectionUrl('postgres://u@[::1]:5451,[fd00::2]/db?target_session_attrs=primary');
    expect(v6.hosts).toEqual([{ host: '[::1]', port: 5451 }, { host: '[fd00::2]', port: 5432 }]);
    expect(v6.urls).toEqual(['postgres://u@[::1]:5451/db', 'postgres://u@[fd00::2]:5432/db']);
    // One host with the parameter: the parameter is still read (and the URL rebuilt without it).
    expect(parseConnectionUrl('postgres://u@h:5451/db?target_session_attrs=read-write')).toMatchObject({ attrs: 'read-write', urls: ['postgres://u@h:5451/db'] });
  });

  it('refuses what is not a connection URL, never quoting it', () => {
    for (const bad of ['localhost:5432/db', 'http://h/db', 'postgres://u:pw@h1:5432,:5433/db', 'postgres://u:pw@h1:99999,h2/db', 'postgres://u:pw@h1:x,h2/db', 'postgres://u:pw@[::1,h2/db']) {
      let message = '';
      try {
        parseConnectionUrl(bad);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, bad).not.toBe('');
      expect(message).not.toContain('pw');
    }
  });

  it('names a URL without its user or password', () => {
    expect(describeConnectionUrl('postgres://admin:hunter2@h1:5432,h2:5432/cms?target_session_attrs=read-write')).toBe('h1:5432,h2:5432/cms');
    expect(describeConnectionUrl('postgres://admin:hunter2@h1:x,h2/cms?sslmode=require')).toBe('h1:x,h2/cms');
    expect(describeConnectionUrl('postgres://admin:hun/ter@2@h1/cms')).toBe('[redacted]');
    expect(describeConnectionUrl('admin:hunter2@h1/cms')).toBe('[redacted]');
  });
});

describe('the config', () => {
  it('takes a multi-host URL for the primary and for replicas', () => {
    const url = 'postgres://u:p@h1:5451,h2:5452/prod?target_session_attrs=read-write';
    const replicas = 'postgres://u:p@r1:5441,r2:5442/prod?target_session_attrs=standby';
    const other = 'postgres://u:p@r3:5443/prod';
    const config = parseConfig({ PRODUCTION_DATABASE_URL: url, PRODUCTION_DATABASE_REPLICA_URLS: `${replicas}, ${other}` });
    expect(config.environments.production.databaseUrl).toBe(url);
    // The list's commas are told from the hosts' commas by the scheme that follows.
    expect(config.environments.production.replicaUrls).toEqual([replicas, other]);
  });

  it('reports a malformed database URL by its hosts, never its password', () => {
    let problems: string[] = [];
    try {
      parseConfig({ PRODUCTION_DATABASE_URL: 'postgres://u:hunter2@h1:5451,h2:5452/prod?target_session_attrs=sometimes' });
    } catch (err) {
      problems = (err as ConfigError).problems;
    }
    expect(problems).toEqual(['PRODUCTION_DATABASE_URL: target_session_attrs: expected one of any, read-write, primary, read-only, standby (got h1:5451,h2:5452/prod)']);
    expect(problems.join()).not.toContain('hunter2');
  });
});

describe('HostOrder', () => {
  it('tries the hosts in the URL order until one is found; then that one first, then the others in order', () => {
    const order = new HostOrder(3);
    expect(order.walk()).toEqual([0, 1, 2]);
    order.lost(0);
    order.found(1);
    expect(order.walk()).toEqual([1, 0, 2]);
    // Another host failing leaves the preference alone.
    order.lost(2);
    expect(order.walk()).toEqual([1, 0, 2]);
  });

  it('goes through the list from the first again once the preferred host fails (libpq order)', () => {
    const order = new HostOrder(3);
    order.found(2);
    expect(order.walk()).toEqual([2, 0, 1]);
    order.lost(2);
    expect(order.current).toBeUndefined();
    expect(order.walk()).toEqual([0, 1, 2]);
  });
});

describe('refusals as answers', () => {
  it('a write refused as read-only or a server shutting down is 503 DATABASE_UNAVAILABLE, never 500', () => {
    for (const code of ['25006', '57P01', '57P02', '57P03', '08006']) {
      const answer = fromDbError(new DbError('refused', code, undefined, undefined));
      expect([answer.statusCode, answer.code], code).toEqual([503, 'DATABASE_UNAVAILABLE']);
    }
  });

  it("pg's own lost-connection errors (no SQLSTATE) become 08006, other driver errors keep theirs", () => {
    for (const message of ['Connection terminated unexpectedly', 'Connection terminated', 'Client has encountered a connection error and is not queryable']) {
      expect(toDbError(new Error(message)).code, message).toBe('08006');
      expect(fromDbError(toDbError(new Error(message))).statusCode).toBe(503);
    }
    expect(toDbError(new Error('invalid input syntax')).code).toBeUndefined();
    expect(toDbError(Object.assign(new Error('duplicate'), { code: '23505' })).code).toBe('23505');
  });
});
