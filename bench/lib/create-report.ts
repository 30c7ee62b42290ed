// `POST /reports/create` as the bot sends it, for the scenarios that measure report creation
// (autocannon) or keep a writer creating reports beside the reads they measure (open loop).
import type { MeasureOptions } from '../types.js';
import { startWriter, type Writer } from './open-loop-writer.js';
import { API_KEY } from './service.js';

const headers = () => ({ authorization: API_KEY, 'content-type': 'application/json' });

/** Leaves the optional display names out of a report body. */
export const NAMELESS = { reporter_name: undefined, reported_name: undefined };

/** The report the bench files unless told otherwise. */
export const REPORT = {
  reporter: '421337905512268801',
  reported: '508812330461199872',
  reason: 'Repeated harassment in voice chat',
  notes: 'Reported through the bench',
  evidence: 'Clip attached',
  reporter_name: 'mapleleaf',
  reported_name: 'vexx_rider',
};

/** A report's body; `fields` replace REPORT's in place (JSON drops those set to undefined). */
export const reportBody = (reportId: string, fields: Record<string, unknown> = {}): string => JSON.stringify({ report_id: reportId, ...REPORT, ...fields });

/** Creates under autocannon: `[<id>]` in `body` becomes a fresh id per request. */
export const createLoad = (url: string, body: string, label: string): MeasureOptions => ({
  url: `${url}/reports/create`,
  method: 'POST',
  headers: headers(),
  body,
  idReplacement: true,
  label,
});

/** Creates at `perSecond` over `urls` in turn, open loop (bench/lib/open-loop-writer.ts); `body(i)` is the i-th's. */
export const startCreating = (urls: string[], perSecond: number, body: (i: number) => string): Writer =>
  startWriter(urls, perSecond, (i) => ({ path: '/reports/create', method: 'POST', headers: headers(), body: body(i) }));
