import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    // Hooks start models and child processes: on a loaded machine that takes longer than vitest's 10 s.
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
