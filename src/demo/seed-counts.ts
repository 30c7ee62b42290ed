// What a seed step reports: the rows it wrote per table, e.g. `{agents: 13, admin_allowlist: 4}`.
// Its own module, so the steps (seed-*.ts) and the list that runs them (seed.ts) import it
// without importing each other.
export type SeedCounts = Record<string, number>;
