/**
 * Resolves Apache Kafka from Maven Central into the local caches (scripts/setup.sh calls it), so the
 * first test run does not download it under a test's timeout. Prints what it did.
 */
import { kafkaDistribution } from "../local/src/services/kafka/distribution.ts";

const t0 = performance.now();
const dist = await kafkaDistribution();
const s = ((performance.now() - t0) / 1000).toFixed(1);
console.log(
  `setup: Apache Kafka ${dist.version} ${dist.resolved ? `downloaded and resolved in ${s} s` : `cached (${s} s)`}`,
);
