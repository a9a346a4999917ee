import { CreateQueueCommand, GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import { resolveValue } from "../../runtime/intrinsics.ts";
import type { ResourceMaterialiser } from "../../runtime/materialiseState.ts";
import type { LocalQueue } from "../../runtime/model.ts";

/** Queue attributes copied to the emulator as they are. */
const COPIED_ATTRIBUTES = [
  "VisibilityTimeout",
  "MessageRetentionPeriod",
  "DelaySeconds",
  "MaximumMessageSize",
  "ReceiveMessageWaitTimeSeconds",
  "FifoQueue",
  "ContentBasedDeduplication",
  "DeduplicationScope",
  "FifoThroughputLimit",
] as const;

/** `AWS::SQS::Queue` → a queue on fauxqs, with its redrive policy. */
export const materialiseQueue: ResourceMaterialiser = async (id, r, s) => {
  const p = r.Properties ?? {};
  const fifo = p.FifoQueue === true || p.FifoQueue === "true";
  let name = s.physicalName(p.QueueName, id, fifo ? 75 : 80, `${id}.QueueName`);
  if (fifo && !name.endsWith(".fifo")) name = `${name}.fifo`;
  const attributes: Record<string, string> = {};
  for (const k of COPIED_ATTRIBUTES) {
    if (p[k] !== undefined) attributes[k] = String(resolveValue(p[k], s.ctx, `${id}.${k}`));
  }
  let redrive: { deadLetterTargetArn: string; maxReceiveCount: number } | undefined;
  if (p.RedrivePolicy !== undefined) {
    const raw = resolveValue(p.RedrivePolicy, s.ctx, `${id}.RedrivePolicy`);
    const rp = (typeof raw === "string" ? JSON.parse(raw) : raw) as {
      deadLetterTargetArn: string;
      maxReceiveCount: unknown;
    };
    redrive = { deadLetterTargetArn: rp.deadLetterTargetArn, maxReceiveCount: Number(rp.maxReceiveCount) };
    attributes.RedrivePolicy = JSON.stringify(redrive);
  }
  if (p.RedriveAllowPolicy !== undefined) {
    const raw = resolveValue(p.RedriveAllowPolicy, s.ctx, `${id}.RedriveAllowPolicy`);
    attributes.RedriveAllowPolicy = typeof raw === "string" ? raw : JSON.stringify(raw);
  }
  if (p.KmsMasterKeyId !== undefined || p.SqsManagedSseEnabled !== undefined)
    s.note("SQS encryption settings are accepted and not emulated");
  const { QueueUrl } = await s.sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  const { Attributes } = await s.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["QueueArn", "VisibilityTimeout"] }),
  );
  const q: LocalQueue = {
    logicalId: id,
    name,
    url: QueueUrl!,
    arn: Attributes!.QueueArn!,
    fifo,
    visibilityTimeoutSeconds: Number(Attributes?.VisibilityTimeout ?? 30),
    ...(redrive
      ? { deadLetterQueueArn: redrive.deadLetterTargetArn, maxReceiveCount: redrive.maxReceiveCount }
      : {}),
  };
  s.queues.push(q);
  s.report.created.push({
    logicalId: id,
    type: r.Type,
    detail: name + (redrive ? ` (redrive after ${redrive.maxReceiveCount} receives)` : ""),
  });
  return { ref: q.url, attrs: { Arn: q.arn, QueueName: name, QueueUrl: q.url } };
};
