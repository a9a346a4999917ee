import { inject } from "vitest";

// Workers read the emulator endpoints through the standard SDK variables, like deployed code would.
Object.assign(process.env, inject("emulatorEnv"));
