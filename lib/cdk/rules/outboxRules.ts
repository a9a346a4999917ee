/** The outbox relay's rule. */
import { ConsumerRuleError } from "./ruleError.ts";

/**
 * The outbox relay's stream mapping must read each shard with one batch at a time. With a
 * ParallelizationFactor above 1, Lambda keeps order only per item (partition key + sort key), and
 * every outbox event is an item of its own: two events of one aggregate can be in two concurrent
 * batches, and the later one would be published first. (The relay's order check would then hold
 * the later one back for the sweeper, so order holds, but most events of busy aggregates would
 * wait minutes for it.) Scale the relay with more stream shards (table throughput), not the factor.
 */
export function checkRelayParallelization(relay: string, parallelizationFactor: number): void {
  if (parallelizationFactor <= 1) return;
  throw new ConsumerRuleError(
    "RelayParallelizationBreaksOrder",
    `Outbox relay "${relay}": parallelizationFactor ${parallelizationFactor} would break order per aggregate. ` +
      `With a factor above 1, Lambda keeps a DynamoDB stream's order only per item, and each outbox event is ` +
      `an item of its own, so two events of one aggregate can be published by concurrent batches in either ` +
      `order. Leave parallelizationFactor at 1 (the default).`,
    relay,
  );
}
