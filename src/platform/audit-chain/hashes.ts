// The audit hash chain's definition (issue 21), shared by the sealer and verify-audit. Anyone can
// recompute it from the rows without this code:
//
//   row_hash   = SHA-256( JCS({"source": <table>, "row": <the row as JSON>}) )
//   chain_hash = SHA-256( previous chain_hash || position as 8 bytes big-endian || row_hash )
//
// JCS is RFC 8785 JSON canonicalization (the `canonicalize` package, by the RFC's author). The row
// is PostgreSQL's to_jsonb of the whole row, every column the service wrote, read with the session
// time zone UTC; left out are the generated events.search_text and sealing_tx, the sealer's
// bookkeeping (a sealed row's place is its position; seal.ts rebases sealing_tx after a move to
// another server), and events.report_flagged, a column no release has yet: reserved so that a
// later release can keep each event's current report flag on the event (issue 38: the visibility
// model's per-row probes) while this one, serving beside it during the upgrade, seals the same.
// The first seal's previous chain_hash is 32 zero bytes. Hashes travel as lowercase hex. jsonb
// numbers are read as JavaScript numbers: digits past double precision are not covered (the
// service writes none; ids and chat ids are text).
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';

export const SEALED_TABLES = ['audit_log', 'events'] as const;
export type SealedTable = (typeof SEALED_TABLES)[number];

export const GENESIS_HASH = '0'.repeat(64);

/** Where the chain ends. */
export interface ChainHead {
  /** Rows sealed: the last position. */
  rows: number;
  /** The last seal's chain_hash (the genesis hash when nothing is sealed yet). */
  hash: string;
}

/** The row's content as sealed: one expression per table, aliased `r` in the FROM clause. */
export const ROW_JSON: Record<SealedTable, string> = {
  audit_log: "to_jsonb(r) - 'sealing_tx'",
  events: "to_jsonb(r) - 'search_text' - 'sealing_tx' - 'report_flagged'",
};

/** Sealer and verifier read timestamps in the same zone, whatever the server's default. */
export const UTC = "set local timezone = 'UTC'";

/** Both tables' advisory lock: one sealer at a time per database, across instances. */
export const SEAL_LOCK_KEY = 4_207_110_921;

export function rowHash(source: SealedTable, row: unknown): string {
  const text = canonicalize({ source, row });
  if (text === undefined) throw new Error(`${source}: a row that JSON cannot represent`);
  return createHash('sha256').update(text).digest('hex');
}

export function chainHash(previous: string, position: number, rowHashHex: string): string {
  const pos = Buffer.alloc(8);
  pos.writeBigUInt64BE(BigInt(position));
  return createHash('sha256').update(Buffer.from(previous, 'hex')).update(pos).update(Buffer.from(rowHashHex, 'hex')).digest('hex');
}

/** A row's place in the chain's order: (sealing_tx, table, id). sealing_tx is xid8 text. */
export interface ChainKey {
  tx: string;
  source: SealedTable;
  id: number;
}

export function compareKeys(a: ChainKey, b: ChainKey): number {
  const ta = BigInt(a.tx);
  const tb = BigInt(b.tx);
  if (ta !== tb) return ta < tb ? -1 : 1;
  if (a.source !== b.source) return a.source < b.source ? -1 : 1;
  return a.id - b.id;
}
