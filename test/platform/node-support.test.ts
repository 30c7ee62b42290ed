// Which Node is past its end of life (src/platform/node-support.ts), decided for a given day: the
// boot warning's decision and text, and package.json's `engines` naming the releases the schedule
// supports on the day of this release. The warning logged once by the real process:
// test/platform/lifecycle.test.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { endOfLifeMessage, NODE_END_OF_LIFE, nodePastEndOfLife } from '../../src/platform/node-support.js';

const ROOT = join(import.meta.dirname, '../..');
const on = (day: string) => new Date(`${day}T12:00:00Z`);

describe('nodePastEndOfLife', () => {
  it('the release schedule: 20, 22 and 24 end on April 30 of 2026, 2027 and 2028', () => {
    expect(NODE_END_OF_LIFE).toEqual({ 20: '2026-04-30', 22: '2027-04-30', 24: '2028-04-30' });
  });

  it('Node 20 is supported up to the day before its end of life, and past it from that day (UTC)', () => {
    expect(nodePastEndOfLife('20.20.2', on('2026-04-29'))).toBeUndefined();
    expect(nodePastEndOfLife('20.20.2', new Date('2026-04-29T23:59:59.999Z'))).toBeUndefined();
    const past = { version: '20.20.2', major: 20, endOfLife: '2026-04-30', supported: [24, 22] };
    expect(nodePastEndOfLife('20.20.2', new Date('2026-04-30T00:00:00.000Z'))).toEqual(past);
    expect(nodePastEndOfLife('20.20.2', on('2026-11-26'))).toEqual(past);
  });

  it('Node 22 and 24 are supported today; each is past its end of life from its own day, leaving the newer ones', () => {
    expect(nodePastEndOfLife('22.23.3', on('2026-11-26'))).toBeUndefined();
    expect(nodePastEndOfLife('24.21.0', on('2026-11-26'))).toBeUndefined();
    expect(nodePastEndOfLife('22.23.3', on('2027-04-29'))).toBeUndefined();
    expect(nodePastEndOfLife('22.23.3', on('2027-04-30'))).toEqual({ version: '22.23.3', major: 22, endOfLife: '2027-04-30', supported: [24] });
    expect(nodePastEndOfLife('24.21.0', on('2028-04-30'))).toEqual({ version: '24.21.0', major: 24, endOfLife: '2028-04-30', supported: [] });
  });

  it('an odd-numbered or older major is past its end of life whatever the day', () => {
    for (const version of ['23.11.1', '21.7.3', '18.20.8', '16.20.2']) {
      expect(nodePastEndOfLife(version, on('2026-01-01')), version).toEqual({
        version,
        major: Number.parseInt(version, 10),
        endOfLife: null,
        supported: [24, 22, 20],
      });
    }
  });

  it('a major newer than the schedule knows is not judged: no warning', () => {
    for (const version of ['25.2.0', '26.0.0', '30.1.1']) expect(nodePastEndOfLife(version, on('2029-01-01')), version).toBeUndefined();
  });

  it('reads process.version ("v…") as process.versions.node, and a schedule given to it', () => {
    expect(nodePastEndOfLife('v20.20.2', on('2026-11-26'))?.version).toBe('20.20.2');
    const schedule = { 24: '2028-04-30', 26: '2029-04-30' };
    expect(nodePastEndOfLife('25.2.0', on('2026-11-26'), schedule)).toMatchObject({ major: 25, endOfLife: null, supported: [26, 24] });
    expect(nodePastEndOfLife('26.0.0', on('2026-11-26'), schedule)).toBeUndefined();
  });
});

describe('endOfLifeMessage', () => {
  it('names the version, the day support ended and the releases to run instead', () => {
    expect(endOfLifeMessage(nodePastEndOfLife('20.20.2', on('2026-11-26'))!)).toBe(
      'Node 20.20.2 is past its end of life (2026-04-30) and gets no security fixes: run the service on Node 24 or 22',
    );
    expect(endOfLifeMessage(nodePastEndOfLife('23.11.1', on('2026-11-26'))!)).toBe(
      'Node 23.11.1 is past its end of life and gets no security fixes: run the service on Node 24 or 22',
    );
    expect(endOfLifeMessage(nodePastEndOfLife('24.21.0', on('2028-05-01'))!)).toBe(
      'Node 24.21.0 is past its end of life (2028-04-30) and gets no security fixes: run the service on a supported Node',
    );
  });
});

describe("package.json's engines", () => {
  it('names exactly the majors the schedule supports on the day this version was released (CHANGELOG.md)', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; engines: { node: string } };
    const changelog = readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8');
    const released = new RegExp(`^## \\[${pkg.version.replaceAll('.', '\\.')}\\] - (\\d{4}-\\d{2}-\\d{2})$`, 'm').exec(changelog)?.[1];
    expect(released, `CHANGELOG.md dates ${pkg.version}`).toBeDefined();
    const majors = pkg.engines.node.split('||').map((range) => Number(/^\s*\^(\d+)/.exec(range)?.[1]));
    const supported = Object.keys(NODE_END_OF_LIFE).map(Number).filter((major) => !nodePastEndOfLife(`${major}.0.0`, on(released!)));
    expect(majors.sort((a, b) => a - b)).toEqual(supported.sort((a, b) => a - b));
    expect(pkg.engines.node).toBe('^22.12.0 || ^24');
  });
});
