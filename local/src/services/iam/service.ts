/**
 * IAM: the template's roles and policies become each function's local identity (materialise.ts,
 * run once the rest exists); every AWS and Kafka call is checked against them; the Denials view.
 */
import { at } from "../../console/route.ts";
import type { LocalService } from "../localService.ts";

export const iamService: LocalService = {
  name: "iam",
  consoleRoutes: { reads: [at("api/denials", (p) => p.sources.denials?.all() ?? [])] },
};
