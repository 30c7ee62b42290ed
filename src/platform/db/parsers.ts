// One set of value parsers for both drivers, keyed by type OID, so rows look the same on either.
import pg from 'pg';

const INT8 = 20;
const NUMERIC = 1700;
const TIMESTAMPTZ = 1184;
const DATE = 1082;

const parseTimestamp = pg.types.getTypeParser(TIMESTAMPTZ, 'text') as (value: string) => Date;

/** int8 as a number; a value past 2^53 stays a string rather than losing digits. Chat ids are text. */
function parseInt8(value: string): number | string {
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : value;
}

function parseTimestampIso(value: string): string {
  const date = parseTimestamp(value);
  return Number.isNaN(date.getTime()) ? value : date.toISOString();
}

const identity = (value: string) => value;

export const TYPE_PARSERS: Record<number, (value: string) => unknown> = {
  [INT8]: parseInt8,
  [NUMERIC]: identity,
  [TIMESTAMPTZ]: parseTimestampIso,
  [DATE]: identity,
};
