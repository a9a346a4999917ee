import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    setupFiles: ["test/support/applyEmulatorEnv.ts"],
    pool: "forks",
    // Two cores: more workers only queue on the emulators.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ["default"],
  },
});
