// This release's migrations applied to a database of a million reports and a million events while
// the release before (CHANGELOG.md, as the upgrade check builds it) serves creates at 20/s on it:
// the rollout of a release as it happens (issue 40). The goal: no create waits more than 2 s and
// none fails. PostgreSQL only; loads its databases once (kept, built and sealed by the release
// before), then migrates a copy each run (CREATE DATABASE ... TEMPLATE, seconds).
//
//   npm run bench -- --only migration-under-load --pg postgres://root@127.0.0.1:5432/test
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { migrate } from '../../src/platform/db/migrate.js';
import { openPostgres } from '../../src/platform/db/postgres.js';
import { releaseBeforeIn } from '../../scripts/release-before.js';
import { buildRef } from '../lib/builds.js';
import { onCleanup } from '../lib/cleanup.js';
import { reportBody } from '../lib/create-report.js';
import { keptDatabases, sizeLabel } from '../lib/kept-database.js';
import { describeWriter, startWriter } from '../lib/open-loop-writer.js';
import { admin, withDatabase } from '../lib/pg.js';
import { stop } from '../lib/proc.js';
import { API_KEY, startService } from '../lib/service.js';
import type { Scenario } from '../types.js';

const ROWS = 1_000_000;
const CREATES_PER_SECOND = 20;
const GOAL_MS = 2_000;
/** Creates before the migration starts and after it ends. */
const AROUND_MS = 5_000;
const CHANGELOG = fileURLToPath(new URL('../../../CHANGELOG.md', import.meta.url));

export const migrationUnderLoad: Scenario = {
  name: 'migration-under-load',
  description: `this release's migrations on ${sizeLabel(ROWS)} reports and events while the release before (CHANGELOG.md) serves ${CREATES_PER_SECOND} creates/s on them: the longest create (PostgreSQL)`,
  needs: [],
  // Builds the release before and, the first time, loads a million rows with it.
  onlyWhenNamed: true,
  async run(ctx) {
    const server = ctx.options.pg;
    if (!server) throw new Error('migration-under-load runs on PostgreSQL only: --pg <url>');
    const before = releaseBeforeIn(readFileSync(CHANGELOG, 'utf8'));
    ctx.log(`    ${before.why}`);
    const build = await buildRef(`release before ${before.version}`, before.commit, ctx.log);
    const kept = await keptDatabases(server, ROWS, ctx.log, { suffix: `before_${build.commit.slice(0, 7)}`, build });

    // A copy of each to migrate: the kept pair stays at the release before's schema for the next run.
    const copy = `cms_migrating_${randomBytes(4).toString('hex')}`;
    const copies = { productionUrl: withDatabase(server, copy), demoUrl: withDatabase(server, `${copy}_demo`) };
    onCleanup(() => admin(server, async (c) => {
      for (const name of [copy, `${copy}_demo`]) await c.query(`drop database if exists "${name}" with (force)`);
    }));
    const copied = Date.now();
    await admin(server, async (c) => {
      await c.query(`create database "${copy}" template "${new URL(kept.productionUrl).pathname.slice(1)}"`);
      await c.query(`create database "${copy}_demo" template "${new URL(kept.demoUrl).pathname.slice(1)}"`);
    });
    ctx.log(`    copied the kept databases in ${((Date.now() - copied) / 1000).toFixed(0)} s`);

    const { child } = await startService({ ...copies, chat: true, script: build.script, label: build.label });
    try {
      const writer = startWriter([child.url], CREATES_PER_SECOND, (i) => ({
        path: '/reports/create',
        method: 'POST',
        headers: { authorization: API_KEY, 'content-type': 'application/json' },
        body: reportBody(`MIG-${copy}-${i}`),
      }));
      await sleep(AROUND_MS);
      const started = Date.now();
      const applied: number[] = [];
      for (const url of [copies.productionUrl, copies.demoUrl]) {
        const db = openPostgres({ connectionString: url, max: 1 });
        try {
          applied.push(...(await db.direct((session) => migrate(session))));
        } finally {
          await db.close();
        }
      }
      const migrationS = (Date.now() - started) / 1000;
      await sleep(AROUND_MS);
      const result = await writer.stop();
      ctx.log(`    applied ${[...new Set(applied)].map((v) => String(v).padStart(4, '0')).join(', ') || 'nothing'} in ${migrationS.toFixed(1)} s; writer: ${describeWriter(result)}`);
      return [
        ctx.line('longest create during the rollout', result.latencyMs.max, 'ms', { text: `<= ${GOAL_MS}`, ok: result.latencyMs.max <= GOAL_MS }),
        ctx.line('creates failed', result.failed, 'count', { text: '= 0', ok: result.failed === 0 }),
        ctx.line('create p99 during the rollout', result.latencyMs.p99, 'ms'),
        ctx.line('migration time (both environments)', migrationS, 's'),
      ];
    } finally {
      await stop(child);
    }
  },
};
