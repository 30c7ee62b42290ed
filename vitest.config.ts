import { defineConfig } from 'vitest/config';

/** What `npm test` and `npm run test:slow` (vitest.slow.config.ts) share. */
export const shared = {
  globalSetup: ['test/helpers/global-setup.ts'],
  pool: 'forks' as const,
  // One module graph per worker, not per file: importing the app (Fastify, its schemas, PGlite)
  // cost 2 to 3 s per file, 40% of the suite. Files share no state beyond what they import: each
  // builds its own app on databases of its own (test/helpers/app.ts).
  isolate: false,
  // Three workers on this 2-core machine: the third takes the CPU the others leave while their
  // service processes boot and their timers run (181 s against 189 s with two, same run).
  maxWorkers: 3,
  testTimeout: 30_000,
  hookTimeout: 60_000,
};

// `npm test`: every test but the slow ones of test/slow, which run once in CI (npm run test:slow).
export default defineConfig({
  test: {
    ...shared,
    include: ['test/**/*.test.ts'],
    exclude: ['test/slow/**'],
  },
});
