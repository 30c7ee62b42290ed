// Timeouts, intervals and caps: numbers bounded by what the service can honour (the *_SECONDS
// variables, the realtime and sign-in caps, AUDIT_SEAL_INTERVAL_SECONDS, RETENTION_DAYS).

export function parseWhole(raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) throw new Error(`expected a whole number from ${min} to ${max}`);
  return value;
}

export function parseSeconds(raw: string): number {
  const seconds = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || seconds <= 0 || seconds > 86_400) throw new Error('expected a number of seconds above 0, at most 86400');
  return seconds;
}

/** A row committed more than 5 s ago must be sealed: a pass at least every 4 s leaves a second for it. */
export function parseSealInterval(raw: string): number {
  const seconds = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || seconds < 0.1 || seconds > 4) throw new Error('expected a number of seconds from 0.1 to 4');
  return seconds;
}

/** Whole days, at least one: a closed case younger than a day is still being talked about. At most a century. */
export function parseRetentionDays(raw: string): number {
  return parseWhole(raw, 1, 36_500);
}
