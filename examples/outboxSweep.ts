// The outbox guide's sweeper (docs/outbox.md includes the region); test/integration/guideExamples.test.ts
// runs it on the table the unit-of-work example wrote.
import { createOutboxSweeper, type SweepReport } from "reliable-consumers/outbox";

export async function sweepOnce(tableName: string): Promise<SweepReport> {
  // #region sweep
  const sweeper = createOutboxSweeper({ tableName, minAgeMs: 10 * 60_000 });
  const report = await sweeper.sweep({ deadline: Date.now() + 50_000 });
  // report: { due, republished, parked, failed, held, pendingCount, oldestPendingAgeMs, truncated }
  // #endregion sweep
  return report;
}
