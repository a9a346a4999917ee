/**
 * Queues the template uses but does not create (`sqs.Queue.fromQueueArn`): the ARN appears as a
 * literal in an event source mapping and in policy statements, the URL as a `Fn::Join` in a
 * function's variables. On AWS the function runs against the existing queue; locally each gets a
 * stand-in queue on the emulator, and every value naming the imported queue resolves to the
 * stand-in (`MaterialiseState.alias`), so the mapping polls it, the role's statements on the
 * imported ARN authorise calls on it (and nothing else), and `DLQ_URL` sends to it.
 */
import { CreateQueueCommand, GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import type { CfnTemplate } from "../../runtime/cloudAssembly.ts";
import { type ResolveContext, resolveString } from "../../runtime/intrinsics.ts";
import type { MaterialiseState } from "../../runtime/materialiseState.ts";
import type { LocalQueue } from "../../runtime/model.ts";

/** A queue the template names but does not create, as its ARN or URL says. */
export interface ImportedQueue {
  /** `arn:<partition>:sqs:<region>:<account>:<name>` */
  readonly arn: string;
  readonly name: string;
  /** A FIFO queue's name ends in `.fifo` (and a standard queue's cannot). */
  readonly fifo: boolean;
}

/** How a template names an imported queue: the value is its ARN, or its URL. */
export interface ImportedQueueRef {
  readonly queue: ImportedQueue;
  readonly form: "arn" | "url";
}

// Queue names: up to 80 characters of alphanumerics, hyphens and underscores; a FIFO queue's ends in
// `.fifo`, which counts toward the 80 (CreateQueue API reference; "Amazon SQS FIFO queue quotas").
const NAME = "([A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\\.fifo)";
const REGION = "([a-z]{2}(?:-[a-z]+)+-\\d+)";
const ACCOUNT = "(\\d{12})";
const ARN = new RegExp(`^arn:(aws|aws-cn|aws-us-gov):sqs:${REGION}:${ACCOUNT}:${NAME}$`);
// `https://sqs.<region>.amazonaws.com/<account>/<name>` (what `fromQueueArn` builds, and what SQS
// hands out: SQS Developer Guide, "Making query API requests"), the China regions' `.com.cn`, and
// the legacy `<region>.queue.amazonaws.com` and `queue.amazonaws.com` (us-east-1) endpoints.
const URL_FORM = new RegExp(
  `^https?://(?:sqs\\.${REGION}\\.amazonaws\\.com(?:\\.cn)?|${REGION}\\.queue\\.amazonaws\\.com(?:\\.cn)?|queue\\.amazonaws\\.com)/${ACCOUNT}/${NAME}$`,
);

const partitionOf = (region: string) =>
  region.startsWith("cn-") ? "aws-cn" : region.startsWith("us-gov-") ? "aws-us-gov" : "aws";

const queue = (partition: string, region: string, account: string, name: string): ImportedQueue => ({
  arn: `arn:${partition}:sqs:${region}:${account}:${name}`,
  name,
  fifo: name.endsWith(".fifo"),
});

/** The queue an SQS ARN or URL names; `undefined` for anything else (a wildcard, another service). */
export function importedQueueOf(value: string): ImportedQueueRef | undefined {
  const arn = ARN.exec(value);
  if (arn) return { queue: queue(arn[1]!, arn[2]!, arn[3]!, arn[4]!), form: "arn" };
  const url = URL_FORM.exec(value);
  if (!url) return undefined;
  const region = url[1] ?? url[2] ?? "us-east-1";
  return { queue: queue(partitionOf(region), region, url[3]!, url[4]!), form: "url" };
}

/** One imported queue and every value of the template that names it. */
export interface ImportedQueueUse {
  readonly queue: ImportedQueue;
  readonly refs: Array<{ readonly value: string; readonly form: ImportedQueueRef["form"] }>;
}

/**
 * The ARNs the template's own named queues get where it is deployed, as the template computes them
 * (its region and account pseudo parameters): a template may name its own queue that way instead of
 * by reference (`QueueWithDlq`'s redrive-allow policy does, to avoid a cycle). Those are not imports.
 */
export function ownQueueArns(template: CfnTemplate, ctx: ResolveContext): Set<string> {
  const out = new Set<string>();
  for (const [id, r] of Object.entries(template.Resources ?? {})) {
    const p = r.Properties ?? {};
    if (r.Type !== "AWS::SQS::Queue" || p.QueueName === undefined) continue;
    let name: string;
    try {
      name = resolveString(p.QueueName, ctx, `${id}.QueueName`);
    } catch {
      continue; // a name built from another resource: no constant string can name it either
    }
    const fifo = p.FifoQueue === true || p.FifoQueue === "true";
    if (fifo && !name.endsWith(".fifo")) name = `${name}.fifo`;
    out.add(`arn:${ctx.partition ?? "aws"}:sqs:${ctx.region}:${ctx.accountId}:${name}`);
  }
  return out;
}

/** Each imported queue the strings name, by its ARN; `own` (`ownQueueArns`) are left out. */
export function importedQueuesIn(
  strings: Iterable<string>,
  own: ReadonlySet<string> = new Set(),
): Map<string, ImportedQueueUse> {
  const out = new Map<string, ImportedQueueUse>();
  for (const value of strings) {
    const ref = importedQueueOf(value);
    if (!ref || own.has(ref.queue.arn)) continue;
    const entry = out.get(ref.queue.arn) ?? { queue: ref.queue, refs: [] };
    entry.refs.push({ value, form: ref.form });
    out.set(ref.queue.arn, entry);
  }
  return out;
}

/** The stand-in's name: the imported queue's, after the run's prefix, `.fifo` kept. */
function standInName(q: ImportedQueue, prefix: string): string {
  if (!q.fifo) return `${prefix}${q.name}`.slice(0, 80);
  return `${`${prefix}${q.name.slice(0, -".fifo".length)}`.slice(0, 75)}.fifo`;
}

/** Creates one stand-in on the emulator, with its defaults (FIFO as the name says). */
async function createStandIn(q: ImportedQueue, s: MaterialiseState): Promise<LocalQueue> {
  const name = standInName(q, s.prefix);
  const { QueueUrl } = await s.sqs.send(
    new CreateQueueCommand({ QueueName: name, ...(q.fifo ? { Attributes: { FifoQueue: "true" } } : {}) }),
  );
  const { Attributes } = await s.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["QueueArn", "VisibilityTimeout"] }),
  );
  return {
    logicalId: q.arn,
    name,
    url: QueueUrl!,
    arn: Attributes!.QueueArn!,
    fifo: q.fifo,
    visibilityTimeoutSeconds: Number(Attributes?.VisibilityTimeout ?? 30),
    importedArn: q.arn,
  };
}

/**
 * A local stand-in for each SQS queue the strings name (`constantStrings`: the template's values
 * that no resource of its own computes), listed in the report's `standIns`; each ARN and URL naming
 * it is aliased to the stand-in's. A stand-in that cannot be made is listed as not emulated.
 */
export async function materialiseImportedQueues(
  strings: ReadonlySet<string>,
  s: MaterialiseState,
): Promise<void> {
  const imported = importedQueuesIn(strings, ownQueueArns(s.template, s.ctx));
  for (const { queue: q, refs } of imported.values()) {
    let local: LocalQueue;
    try {
      local = await createStandIn(q, s);
    } catch (error) {
      s.report.unsupported.push({
        logicalId: q.arn,
        type: "AWS::SQS::Queue",
        detail: `imported queue: no local stand-in (${(error as Error).message})`,
      });
      continue;
    }
    for (const ref of refs) s.alias(ref.value, ref.form === "arn" ? local.arn : local.url);
    s.queues.push(local);
    s.report.standIns.push({
      logicalId: q.arn,
      type: "AWS::SQS::Queue",
      detail:
        `imported queue ${q.arn}: a local stand-in (${local.name}${q.fifo ? ", FIFO" : ""}); its settings ` +
        "(visibility timeout, retention, redrive) are the emulator's defaults, not the real queue's",
    });
  }
  if (imported.size > 0)
    s.note(
      "imported queues run on local stand-ins: the real queues' settings (visibility timeout, retention, " +
        "redrive, content-based deduplication) and resource policies are unknown here, so redelivery, " +
        "expiry and cross-account access may differ on AWS; check them before deploying",
    );
}
