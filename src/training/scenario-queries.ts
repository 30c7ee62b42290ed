// The scenario catalog's writes (issue 11): upsert by slug inside the caller's transaction.
import type { Tx } from '../platform/db/types.js';
import type { ScenarioEntry } from './scenario-file.js';

export interface ImportResult {
  created: string[];
  updated: string[];
  unchanged: string[];
}

/**
 * Creates or updates each scenario by slug; a row already equal is left alone (its updated_at
 * keeps meaning "last changed"). One statement for the whole file.
 */
export async function upsertScenarios(tx: Tx, scenarios: readonly ScenarioEntry[]): Promise<ImportResult> {
  const { rows } = await tx.query<{ slug: string; created: boolean }>(
    `insert into training_scenarios (slug, title, published, definition)
     select slug, title, published, definition
     from jsonb_to_recordset($1::jsonb) as x(slug text, title text, published boolean, definition jsonb)
     on conflict (slug) do update set title = excluded.title, published = excluded.published, definition = excluded.definition, updated_at = now()
     where (training_scenarios.title, training_scenarios.published, training_scenarios.definition)
           is distinct from (excluded.title, excluded.published, excluded.definition)
     returning slug, xmax = 0 as created`,
    [JSON.stringify(scenarios)],
  );
  const written = new Map(rows.map((row) => [row.slug, row.created]));
  return {
    created: scenarios.filter((s) => written.get(s.slug) === true).map((s) => s.slug),
    updated: scenarios.filter((s) => written.get(s.slug) === false).map((s) => s.slug),
    unchanged: scenarios.filter((s) => !written.has(s.slug)).map((s) => s.slug),
  };
}
