/**
 * Lambda: functions (run by the function host), their event source mappings (made once their
 * functions and sources exist; each kind is started by the service it reads), the Functions view.
 */
import { ConsoleNotFound } from "../../console/consoleErrors.ts";
import { at } from "../../console/route.ts";
import type { LocalService } from "../localService.ts";
import { materialiseMapping } from "./eventSourceMapping.ts";
import { materialiseFunction } from "./materialise.ts";

export const lambdaService: LocalService = {
  name: "lambda",
  resources: { "AWS::Lambda::Function": materialiseFunction },
  deferred: {
    "AWS::Lambda::EventSourceMapping": {
      placeholder: (id, s) => ({ ref: `${s.prefix}${s.stackName}-${id}`, attrs: {} }),
      resolve: materialiseMapping,
    },
  },
  consoleRoutes: {
    reads: [
      at("api/functions", (p) => p.functions.summaries()),
      at("api/functions/:name", (p, { params, query }) => {
        const series = p.functions.series(params.name!);
        if (!series) throw new ConsoleNotFound(`no function ${params.name}`);
        // ?logs=0: the series only (the page's refresh; it has the lines from the live stream).
        return {
          series,
          logs: query.get("logs") === "0" ? [] : (p.sources.telemetry?.lines(params.name) ?? []),
        };
      }),
    ],
  },
};
