/**
 * Any string as a valid SQS MessageGroupId or MessageDeduplicationId: what the outbox publishes an
 * aggregate id and an event id as, and what a parking queue's copy is grouped by. Pure.
 *
 * SQS refuses a group id longer than 128 characters or with a character outside printable ASCII
 * (`José García`, a space, a 200-character id): an event refused so is parked, and it holds back
 * every later event of its aggregate. So:
 *
 * - A value that SQS accepts and that has no `~` is its own id: readable, and what it always was.
 * - Any other value becomes `<readable prefix>~<hash>`: the prefix is the value with accents
 *   dropped and every character SQS refuses (and `~`) as `_`, cut to fit; the hash is 128 bits of
 *   SHA-256 of the whole value (32 hex digits). The hash alone tells two values apart, so two
 *   values that differ only past the cut or in a refused character stay apart.
 *
 * Why `~`: a mapped id always has one and a value kept as it is never has, so a kept value can
 * never equal a mapped one; two mapped ones are equal only if their hashes collide (2^-128). `~` is
 * the punctuation least likely in real ids (`#`, `:`, `/`, `-`, `_` and `.` are common in keys).
 * The cost: a valid id with a `~` in it is mapped too. Stable: the same value gives the same id in
 * every process and release, so the relay, the sweeper and a requeue all name one group.
 */
import { createHash } from "node:crypto";
import { FIFO_ID_PATTERN, SQS_LIMITS } from "./sqsLimits.ts";

/** Separates the readable prefix of a mapped id from its hash; never in an id kept as it is. */
const MAPPED_MARK = "~";
/** Hex digits of SHA-256 kept: 128 bits. */
const HASH_HEX_DIGITS = 32;

/**
 * `value` as a MessageGroupId / MessageDeduplicationId SQS accepts: itself when SQS accepts it and
 * it has no `~`, else a readable prefix, `~` and a 128-bit hash of the whole value (at most 128
 * characters).
 */
export function toFifoId(value: string): string {
  if (FIFO_ID_PATTERN.test(value) && !value.includes(MAPPED_MARK)) return value;
  const hash = createHash("sha256").update(value, "utf8").digest("hex").slice(0, HASH_HEX_DIGITS);
  const room = SQS_LIMITS.maxFifoIdLength - MAPPED_MARK.length - HASH_HEX_DIGITS;
  const readable = value
    .normalize("NFKD")
    .replace(/\p{M}/gu, "") // the accents NFKD split off: `é` reads as `e`
    .replace(/[^\x21-\x7D]/gu, "_") // what SQS refuses, and `~` (0x7E)
    .slice(0, room);
  return `${readable}${MAPPED_MARK}${hash}`;
}
