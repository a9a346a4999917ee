/**
 * The console's API: one table of reads (GET) and one of actions (POST), joined from every
 * service's own routes (services/registry.ts) and the two views that span services (the overview,
 * a message's trace).
 */
import { SERVICES } from "../services/registry.ts";
import { overviewOf } from "./consoleOverview.ts";
import { at, type Route, required } from "./route.ts";

export type { Route } from "./route.ts";

export const readRoutes: readonly Route[] = [
  at("api/overview", (p) => overviewOf(p.sources)),
  ...SERVICES.flatMap((s) => s.consoleRoutes?.reads ?? []),
  at("api/trace", (p, { query }) => p.trace(required(query, "id"))),
];

export const actionRoutes: readonly Route[] = SERVICES.flatMap((s) => s.consoleRoutes?.actions ?? []);
