import { defineConfig } from "vitest/config";

/**
 * The end-to-end runs (the chaos scenarios and `npm run local`) each start dozens of function
 * environments and saturate both cores; beside other files they starve each other past their
 * timeouts. So they run in a second group, one file at a time, after everything else.
 */
const HEAVY = ["test/chaos/scenarios.test.ts", "test/integration/localRuntimeMain.test.ts"];

export default defineConfig({
  test: {
    globalSetup: ["test/support/globalSetup.ts"],
    setupFiles: ["test/support/applyEmulatorEnv.ts"],
    pool: "forks",
    // Two cores: more workers only queue on the emulators.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ["default"],
    projects: [
      {
        extends: true,
        test: {
          name: "suite",
          include: ["test/**/*.test.ts"],
          exclude: HEAVY,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "end-to-end",
          include: HEAVY,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
