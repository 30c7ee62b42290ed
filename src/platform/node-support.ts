// Which Node releases are still supported, by the Node.js release schedule
// (https://github.com/nodejs/release#release-schedule): the long-term support lines the service
// runs on and the day each reaches its end of life. The service still starts on a Node past it
// (the machines may ship one), and says so once at boot (src/server.ts). Pure: the day is an
// argument, so the tests choose it; a new LTS line is one more row in the table.

/** Each LTS major and the UTC day it reaches its end of life (no fixes from that day on). */
export const NODE_END_OF_LIFE: Readonly<Record<number, string>> = {
  20: '2026-04-30',
  22: '2027-04-30',
  24: '2028-04-30',
};

export interface PastEndOfLife {
  /** The running version, without the leading "v" (`20.20.2`). */
  version: string;
  major: number;
  /** The day its end of life came, or null for a major the table does not list (odd, or older). */
  endOfLife: string | null;
  /** The majors of the table still supported on that day, newest first. */
  supported: number[];
}

const day = (date: Date) => date.toISOString().slice(0, 10);

/**
 * The running Node past its end of life on `today`, or undefined while it is supported. A major
 * of the table is past it from its day on; a major the table does not list is past it when it is
 * older than the newest one listed (an odd-numbered release, never LTS, or a line before the
 * table), and unknown when newer (a release after this table was written: no warning).
 */
export function nodePastEndOfLife(version: string, today: Date, schedule: Readonly<Record<number, string>> = NODE_END_OF_LIFE): PastEndOfLife | undefined {
  const bare = version.replace(/^v/, '');
  const major = Number.parseInt(bare, 10);
  const majors = Object.keys(schedule).map(Number);
  if (!Number.isInteger(major) || major > Math.max(...majors)) return undefined;
  const now = day(today);
  const endOfLife = schedule[major] ?? null;
  if (endOfLife !== null && now < endOfLife) return undefined;
  const supported = majors.filter((m) => now < schedule[m]!).sort((a, b) => b - a);
  return { version: bare, major, endOfLife, supported };
}

/** The boot warning's text: what runs, since when it is unsupported, and what to run instead. */
export function endOfLifeMessage(past: PastEndOfLife): string {
  const since = past.endOfLife === null ? '' : ` (${past.endOfLife})`;
  const instead = past.supported.length > 0 ? `Node ${past.supported.join(' or ')}` : 'a supported Node';
  return `Node ${past.version} is past its end of life${since} and gets no security fixes: run the service on ${instead}`;
}
