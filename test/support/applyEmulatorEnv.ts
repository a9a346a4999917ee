import { inject } from "vitest";

// Workers read the emulator endpoints through the standard SDK variables, like deployed code would.
// `npm run test:unit` starts no emulator, so provides none.
Object.assign(process.env, inject("emulatorEnv") ?? {});

// Keep test output readable: Powertools logs and EMF lines are off unless a test opts in.
process.env.POWERTOOLS_LOG_LEVEL ??= "SILENT";
process.env.POWERTOOLS_METRICS_DISABLED ??= "true";
