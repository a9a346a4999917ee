/** The answer of the console's redrive and replay: lib/dlq's figures, in the page's shape. */
import type { MoveResultDto } from "../../console/consoleApi.ts";

/** A lib/dlq move's figures for the page; `nameOf` names a destination (a queue URL by its name). */
export function moveResultOf(
  dryRun: boolean,
  result: Omit<MoveResultDto, "dryRun">,
  nameOf: (destination: string) => string = (d) => d,
): MoveResultDto {
  return {
    dryRun,
    seen: result.seen,
    moved: result.moved,
    skipped: result.skipped,
    failed: result.failed,
    noDestination: result.noDestination,
    byDestination: Object.fromEntries(Object.entries(result.byDestination).map(([d, n]) => [nameOf(d), n])),
    ...(result.alreadyReplayed === undefined ? {} : { alreadyReplayed: result.alreadyReplayed }),
  };
}
