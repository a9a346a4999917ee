/** Provisioned pollers, which SQS and Kafka mappings both take. */
import { isKnown } from "./ruleError.ts";

/** Provisioned mode's event pollers for one mapping. */
export interface ProvisionedPollers {
  readonly minimumPollers: number;
  readonly maximumPollers: number;
}

/** `min ≤ max`, both integers, inside the given bounds; tokens are not checked. */
export function pollersFit(p: ProvisionedPollers, minLow: number, minHigh: number, maxHigh: number): boolean {
  const { minimumPollers: min, maximumPollers: max } = p;
  return !(
    (isKnown(min) && (!Number.isInteger(min) || min < minLow || min > minHigh)) ||
    (isKnown(max) && (!Number.isInteger(max) || max < minLow || max > maxHigh)) ||
    (isKnown(min, max) && min > max)
  );
}
