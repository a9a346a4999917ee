#!/usr/bin/env node
/** The `reliable-consumers-local` command. */
import { runCli } from "./cli.ts";

process.exit(await runCli(process.argv.slice(2)));
