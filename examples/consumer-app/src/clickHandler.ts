// A Kinesis consumer: one effect per click, whatever Lambda resends.
import { kinesisConsumer } from "reliable-consumers/kinesis";
import { countEffect, type StreamWork } from "./streamEffects.js";

export const handler = kinesisConsumer<StreamWork>(async ({ body }) => countEffect(body), {
  key: (click) => click.id, // a business key: a producer's retried PutRecord gets a new sequence number
  ordering: "key", // partition keys side by side within the shard, each in order
});
