/**
 * `AWS::Kinesis::Stream` and `AWS::Kinesis::StreamConsumer` made on kinesis-local, with what
 * CloudFormation gives for them (AWS::Kinesis::Stream: `Ref` the stream's name, `Arn`;
 * AWS::Kinesis::StreamConsumer: `Ref` and `ConsumerARN` the consumer's ARN, `ConsumerName`,
 * `StreamARN`, `ConsumerStatus`, `ConsumerCreationTimestamp`), and local stand-ins for streams the
 * template names but does not create (`Stream.fromStreamArn`), as imported queues get
 * (sqs/importedQueues.ts).
 */
import {
  CreateStreamCommand,
  DescribeStreamSummaryCommand,
  IncreaseStreamRetentionPeriodCommand,
  type KinesisClient,
  RegisterStreamConsumerCommand,
  ResourceInUseException,
} from "@aws-sdk/client-kinesis";
import { resolveValue } from "../../runtime/intrinsics.ts";
import { type MaterialiseState, num, type ResourceMaterialiser } from "../../runtime/materialiseState.ts";
import type { LocalStream } from "../../runtime/model.ts";

/** On-demand streams open with 4 shards (Kinesis Developer Guide, "On-demand mode features"). */
const ON_DEMAND_SHARDS = 4;
/** Stream names: up to 128 characters (CreateStream API reference). */
const NAME_MAX = 128;

function clientOf(s: MaterialiseState): KinesisClient {
  if (!s.kinesis) throw new Error("no local Kinesis (AWS_ENDPOINT_URL_KINESIS)");
  return s.kinesis;
}

/**
 * Waits for a stream to be ACTIVE. kinesis-local is started with its state changes instantaneous
 * (emulator.ts), so this is a few polls; the SDK's waiter would sleep 10 s between them.
 */
async function activeArn(kinesis: KinesisClient, name: string): Promise<string> {
  for (let i = 0; i < 500; i++) {
    const { StreamDescriptionSummary: d } = await kinesis.send(
      new DescribeStreamSummaryCommand({ StreamName: name }),
    );
    if (d?.StreamStatus === "ACTIVE" && d.StreamARN) return d.StreamARN;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`stream ${name} did not become ACTIVE`);
}

/** Creates (or finds, when it exists already) one stream and waits for it. */
export async function createLocalStream(
  kinesis: KinesisClient,
  name: string,
  shape: { mode: LocalStream["mode"]; shardCount: number; retentionHours: number },
): Promise<string> {
  try {
    await kinesis.send(
      new CreateStreamCommand({
        StreamName: name,
        ...(shape.mode === "ON_DEMAND"
          ? { StreamModeDetails: { StreamMode: "ON_DEMAND" } }
          : { ShardCount: shape.shardCount }),
      }),
    );
  } catch (error) {
    // A second runtime on the same emulator with the same prefix: use the stream as it is.
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  const arn = await activeArn(kinesis, name);
  if (shape.retentionHours > 24)
    await kinesis.send(
      new IncreaseStreamRetentionPeriodCommand({
        StreamName: name,
        RetentionPeriodHours: shape.retentionHours,
      }),
    );
  return arn;
}

/** `AWS::Kinesis::Stream` → a stream on kinesis-local. */
export const materialiseStream: ResourceMaterialiser = async (id, r, s) => {
  const p = r.Properties ?? {};
  const kinesis = clientOf(s);
  const name = s.physicalName(p.Name, id, NAME_MAX, `${id}.Name`);
  const modeDetails = resolveValue(p.StreamModeDetails ?? {}, s.ctx, `${id}.StreamModeDetails`) as {
    StreamMode?: string;
  };
  // Without ShardCount or StreamModeDetails CloudFormation makes a provisioned stream of one shard.
  const mode = modeDetails.StreamMode === "ON_DEMAND" ? "ON_DEMAND" : "PROVISIONED";
  const shardCount =
    mode === "ON_DEMAND" ? ON_DEMAND_SHARDS : num(resolveValue(p.ShardCount, s.ctx, `${id}.ShardCount`), 1);
  const retentionHours = num(resolveValue(p.RetentionPeriodHours, s.ctx, `${id}.RetentionPeriodHours`), 24);
  if (p.StreamEncryption !== undefined)
    s.note(
      `${id}: StreamEncryption is accepted; records are not encrypted locally, but calls need the key's grants`,
    );
  if (retentionHours < 24 || retentionHours > 8760)
    throw new Error(`${id}: RetentionPeriodHours ${retentionHours} is outside 24–8760`);
  const arn = await createLocalStream(kinesis, name, { mode, shardCount, retentionHours });
  s.streams.push({ logicalId: id, name, arn, shardCount, mode, retentionHours });
  s.report.created.push({
    logicalId: id,
    type: r.Type,
    detail: `${name} (${mode === "ON_DEMAND" ? "on-demand, " : ""}${shardCount} shard${shardCount === 1 ? "" : "s"})`,
  });
  return { ref: name, attrs: { Arn: arn } };
};

/** `AWS::Kinesis::StreamConsumer` → an enhanced fan-out consumer registered on kinesis-local. */
export const materialiseStreamConsumer: ResourceMaterialiser = async (id, r, s) => {
  const p = r.Properties ?? {};
  const kinesis = clientOf(s);
  const streamArn = String(resolveValue(p.StreamARN, s.ctx, `${id}.StreamARN`));
  const name = String(resolveValue(p.ConsumerName, s.ctx, `${id}.ConsumerName`));
  const { Consumer } = await kinesis.send(
    new RegisterStreamConsumerCommand({ StreamARN: streamArn, ConsumerName: name }),
  );
  if (!Consumer?.ConsumerARN) throw new Error(`${id}: RegisterStreamConsumer returned no ARN`);
  const arn = Consumer.ConsumerARN;
  s.streamConsumers.push({ logicalId: id, name, arn, streamArn });
  s.report.created.push({ logicalId: id, type: r.Type, detail: `consumer ${name} of ${streamArn}` });
  return {
    ref: arn,
    attrs: {
      ConsumerARN: arn,
      ConsumerName: name,
      StreamARN: streamArn,
      ConsumerStatus: "ACTIVE",
      ConsumerCreationTimestamp: (Consumer.ConsumerCreationTimestamp ?? new Date()).toISOString(),
    },
  };
};

// `arn:<partition>:kinesis:<region>:<account>:stream/<name>`: names are 1–128 of [a-zA-Z0-9_.-].
const STREAM_ARN =
  /^arn:(aws|aws-cn|aws-us-gov):kinesis:([a-z]{2}(?:-[a-z]+)+-\d+):(\d{12}):stream\/([a-zA-Z0-9_.-]{1,128})$/;

/**
 * A stand-in stream for each Kinesis stream ARN the template names but does not create: one shard,
 * 24 h retention (the imported stream's settings are not in the template), and the imported ARN
 * aliased to it, so a mapping reads it and the role's statements on the imported ARN authorise calls
 * on it.
 */
export async function materialiseImportedStreams(
  strings: ReadonlySet<string>,
  s: MaterialiseState,
): Promise<void> {
  const imported = [...strings].filter((v) => STREAM_ARN.test(v));
  if (imported.length === 0) return;
  const kinesis = clientOf(s);
  for (const arn of imported) {
    const name = `${s.prefix}${STREAM_ARN.exec(arn)![4]!}`.slice(0, NAME_MAX);
    const local = await createLocalStream(kinesis, name, {
      mode: "PROVISIONED",
      shardCount: 1,
      retentionHours: 24,
    });
    s.streams.push({
      logicalId: arn,
      name,
      arn: local,
      shardCount: 1,
      mode: "PROVISIONED",
      retentionHours: 24,
      importedArn: arn,
    });
    if (local !== arn) s.alias(arn, local);
    s.report.standIns.push({
      logicalId: arn,
      type: "AWS::Kinesis::Stream",
      detail: `stream ${name} (1 shard, 24 h retention: the emulator's defaults)`,
    });
  }
}
