// Scheduled backups of the embedded environments: BACKUP_DIR, BACKUP_INTERVAL_MINUTES, BACKUP_KEEP.
import type { Env, Read } from './read.js';

export interface BackupConfig {
  dir: string;
  /** BACKUP_INTERVAL_MINUTES, default 60; fractions allowed (a test runs at a few seconds). */
  intervalMs: number;
  /** BACKUP_KEEP, default 7: backups kept per environment, the newest. */
  keep: number;
}

export function readBackup(env: Env, read: Read, problems: string[]): BackupConfig | undefined {
  const dir = read<string | undefined>('BACKUP_DIR', undefined, (v) => v);
  const intervalMs = Math.round(read('BACKUP_INTERVAL_MINUTES', 60, parseMinutes) * 60_000);
  const keep = read('BACKUP_KEEP', 7, parseKeep);
  if (dir !== undefined) return { dir, intervalMs, keep };
  // A schedule without a folder is a mistake to name, not a setting to ignore.
  const orphans = ['BACKUP_INTERVAL_MINUTES', 'BACKUP_KEEP'].filter((name) => env[name]?.trim());
  if (orphans.length > 0) problems.push(`${orphans.join(', ')}: set without BACKUP_DIR`);
  return undefined;
}

function parseMinutes(raw: string): number {
  const minutes = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || minutes < 0.01 || minutes > 10_080) throw new Error('expected a number of minutes from 0.01 to 10080 (a week)');
  return minutes;
}

function parseKeep(raw: string): number {
  const keep = Number(raw);
  if (!/^\d+$/.test(raw) || keep < 1 || keep > 1000) throw new Error('expected a whole number from 1 to 1000');
  return keep;
}
