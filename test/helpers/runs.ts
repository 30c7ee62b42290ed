// How long the property-based and model-based tests (fast-check) run. `npm test` gives each a
// short run, so that a contributor's whole run stays within minutes; .ci/run's slow step (`npm
// run test:slow`) sets TEST_RUNS=long and runs the same tests for longer, on seeds of its own.

export const LONG_RUNS = process.env.TEST_RUNS === 'long';

/** The number of runs (or commands, or cases) for this run's length. */
export function runs(short: number, long: number): number {
  return LONG_RUNS ? long : short;
}

/**
 * The seed of a property: `<variable>` replays one; otherwise `fixed` in short runs (the same
 * cases in every `npm test`) and a new one in long runs. Printed either way, so that any run can
 * be replayed; fast-check prints it again with the shrunk counterexample when a property fails.
 */
export function seedOf(variable: string, fixed: number): number {
  const given = process.env[variable];
  const seed = given !== undefined && given !== '' ? Number(given) : LONG_RUNS ? Math.floor(Math.random() * 2 ** 31) : fixed;
  if (!Number.isSafeInteger(seed)) throw new Error(`${variable} must be an integer (got ${JSON.stringify(given)})`);
  console.log(`${variable}=${seed}${LONG_RUNS ? ' (long run)' : ''}`);
  return seed;
}
