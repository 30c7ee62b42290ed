import { defineConfig } from 'vitest/config';
import { shared } from './vitest.config.js';

// `npm run test:slow`, once per CI run on Node 24 and PostgreSQL (.ci/run): the tests that gain
// nothing from running on every Node and store (the fault tests on the project's own clusters, the
// typed client, a million-row plan), and long runs of the property-based and model-based tests,
// whose short runs are in `npm test` (test/helpers/runs.ts).
export default defineConfig({
  test: {
    ...shared,
    include: ['test/slow/**/*.test.ts', 'test/**/*.property.test.ts', 'test/audit-chain-two-instances.test.ts'],
    env: { TEST_RUNS: 'long' },
    testTimeout: 600_000,
    // The fault tests time failovers on the project's own clusters: two at a time, not three.
    maxWorkers: 2,
  },
});
