import { CfnParameter, Duration, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { KafkaDlq, ManagedKafkaEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import { AwsSolutionsChecks } from "cdk-nag";
import type { MskClusterRef } from "reliable-consumers/cdk";
import { ConsumerFunction, DedupTable, QueueWithDlq } from "reliable-consumers/cdk";
import { describe, expect, it } from "vitest";
import { buildApp } from "../../infra/app.ts";
import { CONTEXT_DEFAULTS } from "../../infra/config.ts";
import { ReferenceServiceStack, STUB_ENTRY } from "../../infra/stacks/referenceServiceStack.ts";
import { GUARD_PLUGIN } from "../../lib/cdk/guardAcknowledgements.ts";
import { findingsOf, ruleCodeOf, testApp, validationReport } from "./synthHelpers.ts";

// Small stacks, no bundling: each rule must fail synth with a message that says what to change.
// A synthesis of the whole reference app runs cdk-nag and cfn-guard: tens of seconds on two shared cores.
const APP_SYNTH = { timeout: 180_000 };
const consumer = (stack: Stack, id: string, timeout: Duration) =>
  new ConsumerFunction(stack, id, { entry: STUB_ENTRY, timeout });

describe("visibility timeout vs. consumer timeout", () => {
  it("derives 6 × timeout + batching window when the visibility timeout is not given", () => {
    const stack = new Stack(testApp(), "S");
    const q = new QueueWithDlq(stack, "Q", {
      consumerTimeout: Duration.seconds(30),
      maxBatchingWindow: Duration.seconds(10),
    });
    consumer(stack, "C", Duration.seconds(30)).addSqsTrigger(q, { maxBatchingWindow: Duration.seconds(10) });
    Template.fromStack(stack).hasResourceProperties("AWS::SQS::Queue", { VisibilityTimeout: 190 });
  });

  it("fails synth when the visibility timeout is too short", () => {
    const stack = new Stack(testApp(), "S");
    const q = new QueueWithDlq(stack, "Q", { visibilityTimeout: Duration.seconds(60) });
    const c = consumer(stack, "C", Duration.seconds(30));
    expect(ruleCodeOf(() => c.addSqsTrigger(q))).toBe("VisibilityTimeoutTooShort");
    expect(() => c.addSqsTrigger(q)).toThrow(
      /^\[VisibilityTimeoutTooShort\] S\/C: .*visibility timeout of 1m \(60s\), but its consumer "C" needs at least 6 × function timeout \(30s\) \+ batching window \(0s\) = 3m \(180s\)/,
    );
  });

  it("sizes a heartbeat queue at the function timeout, where the default heartbeat fires within the invocation", () => {
    const stack = new Stack(testApp(), "S");
    const q = new QueueWithDlq(stack, "Q", {
      consumerTimeout: Duration.minutes(5),
      visibilityHeartbeat: true,
    });
    expect(() => consumer(stack, "C", Duration.minutes(5)).addSqsTrigger(q, { batchSize: 1 })).not.toThrow();
    Template.fromStack(stack).hasResourceProperties("AWS::SQS::Queue", { VisibilityTimeout: 300 });
    const short = new QueueWithDlq(stack, "Short", {
      visibilityTimeout: Duration.minutes(2),
      visibilityHeartbeat: true,
    });
    // Lambda refuses a visibility timeout below the function timeout.
    expect(ruleCodeOf(() => consumer(stack, "C2", Duration.minutes(5)).addSqsTrigger(short))).toBe(
      "HeartbeatVisibilityTooShort",
    );
  });

  it("skips a batch size or a batching window that is a token", () => {
    const stack = new Stack(testApp(), "S");
    const size = new CfnParameter(stack, "Size", { type: "Number" }).valueAsNumber;
    const window = Duration.seconds(new CfnParameter(stack, "Window", { type: "Number" }).valueAsNumber);
    const fifo = new QueueWithDlq(stack, "F", { fifo: true, consumerTimeout: Duration.seconds(30) });
    const std = new QueueWithDlq(stack, "Q", { consumerTimeout: Duration.seconds(30) });
    // Read as numbers, the tokens would be a batch size "below 1" and a window "below 0".
    expect(() =>
      consumer(stack, "C", Duration.seconds(30)).addSqsTrigger(fifo, { batchSize: size }),
    ).not.toThrow();
    expect(() =>
      consumer(stack, "D", Duration.seconds(30)).addSqsTrigger(std, {
        batchSize: 100,
        maxBatchingWindow: window,
      }),
    ).not.toThrow();
  });

  it("counts the batching window", () => {
    const stack = new Stack(testApp(), "S");
    const q = new QueueWithDlq(stack, "Q", { consumerTimeout: Duration.seconds(30) });
    const c = consumer(stack, "C", Duration.seconds(30));
    const trigger = () =>
      c.addSqsTrigger(q, {
        batchSize: 100,
        maxBatchingWindow: Duration.seconds(5),
      });
    expect(ruleCodeOf(trigger)).toBe("VisibilityTimeoutTooShort");
    expect(trigger).toThrow(/= 3m 5s \(185s\)/);
  });

  it("catches a function timeout raised after the queue was sized", () => {
    const stack = new Stack(testApp(), "S");
    const q = new QueueWithDlq(stack, "Q", { consumerTimeout: Duration.seconds(30) });
    const c = consumer(stack, "C", Duration.seconds(31));
    expect(ruleCodeOf(() => c.addSqsTrigger(q))).toBe("VisibilityTimeoutTooShort");
    expect(() => c.addSqsTrigger(q)).toThrow(/needs at least .* \(186s\)/);
  });

  it("fails the reference stack when its orders queue is set too short", () => {
    expect(
      () =>
        new ReferenceServiceStack(testApp(), "R", {
          context: CONTEXT_DEFAULTS,
          ordersQueue: { visibilityTimeout: Duration.seconds(120) },
        }),
    ).toThrow(
      /\[VisibilityTimeoutTooShort\] R\/order-consumer: Queue "R\/Orders" has a visibility timeout of 2m \(120s\)/,
    );
  });
});

describe("dedup window vs. retry paths", () => {
  it("fails synth when the dedup TTL is shorter than a queue's retention it must cover", () => {
    const app = testApp();
    const stack = new Stack(app, "S");
    const dedup = new DedupTable(stack, "Dedup", { window: Duration.days(3) });
    const q = new QueueWithDlq(stack, "Q", {
      consumerTimeout: Duration.seconds(30),
      retentionPeriod: Duration.days(4),
      dlqRetentionPeriod: Duration.days(4),
    });
    // Declared before the trigger: the check runs at synth, so later triggers still count.
    const c = consumer(stack, "C", Duration.seconds(30)).useDedupWindow(dedup);
    c.addSqsTrigger(q);
    expect(ruleCodeOf(() => app.synth())).toBe("DedupWindowTooShort");
    expect(() => app.synth()).toThrow(
      /Dedup table "S\/Dedup" remembers keys for 3d \(259200s\)[\s\S]*- C: queue Q: retention 4d \+ parked in the DLQ 4d \+ redriven 4d = 12d \(1036800s\)/,
    );
  });

  it("counts a copy parked with SendMessage and a redriven copy: the default queue outlives a 15-day window", () => {
    const app = testApp();
    const stack = new Stack(app, "S");
    // 4 d retention, 14 d DLQ retention (the defaults): the old rule took max(4 d, 14 d) = 14 d < 15 d.
    const q = new QueueWithDlq(stack, "Q", { consumerTimeout: Duration.seconds(30) });
    const dedup = new DedupTable(stack, "Dedup", { window: Duration.days(15) });
    consumer(stack, "C", Duration.seconds(30)).useDedupWindow(dedup).addSqsTrigger(q);
    expect(ruleCodeOf(() => app.synth())).toBe("DedupWindowTooShort");
    expect(() => app.synth()).toThrow(/- C: queue Q: .* = 22d \(1900800s\)/);
  });

  it("passes with the default queue and the default dedup window", () => {
    const app = testApp();
    const stack = new Stack(app, "S");
    const q = new QueueWithDlq(stack, "Q", { consumerTimeout: Duration.seconds(30) });
    consumer(stack, "C", Duration.seconds(30))
      .useDedupWindow(new DedupTable(stack, "Dedup"))
      .addSqsTrigger(q);
    expect(() => app.synth()).not.toThrow();
  });

  it("does not check a retention that is a token", () => {
    const app = testApp();
    const stack = new Stack(app, "S");
    const days = new CfnParameter(stack, "Retention", { type: "Number" }).valueAsNumber;
    const q = new QueueWithDlq(stack, "Q", {
      consumerTimeout: Duration.seconds(30),
      retentionPeriod: Duration.seconds(days),
      dlqRetentionPeriod: Duration.days(14),
    });
    const dedup = new DedupTable(stack, "Dedup", { window: Duration.days(1) });
    consumer(stack, "C", Duration.seconds(30)).useDedupWindow(dedup).addSqsTrigger(q);
    expect(() => app.synth()).not.toThrow();
  });

  it("passes when the window is longer", () => {
    const app = testApp();
    const stack = new Stack(app, "S");
    // 4 d + parked 4 d + redriven 4 d = 12 d.
    const dedup = new DedupTable(stack, "Dedup", { window: Duration.days(13) });
    const q = new QueueWithDlq(stack, "Q", {
      consumerTimeout: Duration.seconds(30),
      retentionPeriod: Duration.days(4),
      dlqRetentionPeriod: Duration.days(4),
    });
    consumer(stack, "C", Duration.seconds(30)).useDedupWindow(dedup).addSqsTrigger(q);
    expect(() => app.synth()).not.toThrow();
  });

  it("fails synth when a Kafka retry ladder plus topic retention outlives the window", () => {
    const app = testApp();
    const stack = new Stack(app, "S");
    const vpc = ec2.Vpc.fromVpcAttributes(stack, "Vpc", {
      vpcId: "vpc-1",
      availabilityZones: ["us-east-1a"],
      privateSubnetIds: ["subnet-1"],
    });
    const cluster: MskClusterRef = {
      clusterArn: CONTEXT_DEFAULTS.mskClusterArn,
      bootstrapBrokers: "b-1:9098",
      kind: "provisioned",
      vpc,
      subnets: { subnets: vpc.privateSubnets },
      securityGroup: ec2.SecurityGroup.fromSecurityGroupId(stack, "Sg", "sg-1"),
    };
    const dedup = new DedupTable(stack, "Dedup", { window: Duration.days(15) });
    new ConsumerFunction(stack, "K", {
      entry: STUB_ENTRY,
      vpc,
      vpcSubnets: cluster.subnets,
      securityGroups: [cluster.securityGroup],
    })
      .useDedupWindow(dedup)
      .addMskTrigger(cluster, {
        topic: "events",
        retryDelaysSeconds: [60, 3600],
        partitions: 3,
        deadLetterRetentionSeconds: 15 * 86_400,
      });
    expect(ruleCodeOf(() => app.synth())).toBe("DedupWindowTooShort");
    expect(() => app.synth()).toThrow(/remembers keys for 15d[\s\S]*- K: topic events: retry ladder 1m → 1h/);
  });

  it("fails the reference stack when its dedup window is shorter than the Kafka DLQ retention", () => {
    const app = testApp();
    new ReferenceServiceStack(app, "R", { context: CONTEXT_DEFAULTS, dedupWindow: Duration.days(10) });
    expect(ruleCodeOf(() => app.synth())).toBe("DedupWindowTooShort");
    expect(() => app.synth()).toThrow(/Dedup table "R\/Dedup" remembers keys for 10d[\s\S]*payment-consumer/);
  });
});

describe("issue 34 item 6: queue names SQS accepts, the DLQ's included", () => {
  const queueNames = (stack: Stack) =>
    Object.values(Template.fromStack(stack).findResources("AWS::SQS::Queue")).map(
      (r) => (r as { Properties: { QueueName?: string } }).Properties.QueueName,
    );
  const queue = (name: string, fifo: boolean) => {
    const stack = new Stack(testApp(), "S");
    new QueueWithDlq(stack, "Q", { queueName: name, fifo, consumerTimeout: Duration.seconds(30) });
    return stack;
  };

  it("a FIFO queueName of 72 to 75 characters fails synth, saying how long it may be; 71 names a DLQ of 80", () => {
    for (const length of [72, 75]) {
      const name = "q".repeat(length);
      expect(ruleCodeOf(() => queue(name, true))).toBe("QueueNameTooLong");
      expect(() => queue(name, true)).toThrow(
        new RegExp(
          `^\\[QueueNameTooLong\\] S/Q: queueName '${name}' is ${length} characters: its DLQ '${name}-dlq\\.fifo' would be ${length + 9}, over SQS's 80 .*at most 71 characters on a FIFO queue`,
        ),
      );
    }
    const fits = queueNames(queue("q".repeat(71), true));
    expect(fits.map((n) => n?.length).sort()).toEqual([76, 80]);
    expect(fits).toContain(`${"q".repeat(71)}-dlq.fifo`);
  });

  it("a standard queueName may be 76 characters (its DLQ 80), not 77", () => {
    expect(
      queueNames(queue("s".repeat(76), false))
        .map((n) => n?.length)
        .sort(),
    ).toEqual([76, 80]);
    expect(ruleCodeOf(() => queue("s".repeat(77), false))).toBe("QueueNameTooLong");
  });

  it("refuses characters SQS refuses, and a '.fifo' the construct appends itself", () => {
    expect(ruleCodeOf(() => queue("orders.v2", false))).toBe("QueueNameInvalid");
    expect(() => queue("orders.fifo", true)).toThrow(/leave out '\.fifo': it is appended for you/);
  });

  it("leaves a generated name as it was: 75 characters at most, the DLQ named by CloudFormation", () => {
    const stack = new Stack(testApp(), "S".repeat(60));
    new QueueWithDlq(stack, "Q".repeat(60), { fifo: true, consumerTimeout: Duration.seconds(30) });
    const names = queueNames(stack);
    expect(names.filter((n) => n === undefined)).toHaveLength(1);
    expect(names.find((n) => n !== undefined)?.length).toBeLessThanOrEqual(80);
  });
});

describe("other synth-time guards", () => {
  it("refuses a missing handler unless stubs are allowed", () => {
    expect(
      () =>
        new ReferenceServiceStack(testApp(), "R", {
          context: { ...CONTEXT_DEFAULTS, allowMissingHandlers: false },
          entries: { "payment-consumer": "/nonexistent/handler.ts" },
        }),
    ).toThrow(/payment-consumer: handler \/nonexistent\/handler.ts does not exist/);
  });

  it("refuses an MSK consumer outside a VPC and a DLQ that expires before its queue", () => {
    const stack = new Stack(testApp(), "S");
    expect(
      () =>
        new QueueWithDlq(stack, "Q", {
          consumerTimeout: Duration.seconds(30),
          retentionPeriod: Duration.days(7),
          dlqRetentionPeriod: Duration.days(1),
        }),
    ).toThrow(/DLQ retention \(1d\) is shorter than the queue's \(7d\)/);
    expect(
      ruleCodeOf(
        () =>
          new QueueWithDlq(stack, "Q1", {
            consumerTimeout: Duration.seconds(30),
            retentionPeriod: Duration.days(7),
            dlqRetentionPeriod: Duration.days(1),
          }),
      ),
    ).toBe("DlqRetentionShorterThanQueue");
    expect(ruleCodeOf(() => new QueueWithDlq(stack, "Q2", {}))).toBe("VisibilityTimeoutUnknown");
    expect(
      ruleCodeOf(() =>
        new ConsumerFunction(stack, "K", { entry: STUB_ENTRY }).addMskTrigger(clusterIn(stack), ladder),
      ),
    ).toBe("MskConsumerOutsideVpc");
  });
});

const ladder = { topic: "events", retryDelaysSeconds: [60], partitions: 3 };
/** A referenced cluster in `stack` (its VPC and security group are created once per stack). */
function clusterIn(stack: Stack): MskClusterRef {
  const vpc =
    (stack.node.tryFindChild("Vpc") as ec2.IVpc | undefined) ??
    ec2.Vpc.fromVpcAttributes(stack, "Vpc", {
      vpcId: "vpc-1",
      availabilityZones: ["us-east-1a"],
      privateSubnetIds: ["subnet-1"],
    });
  const securityGroup =
    (stack.node.tryFindChild("Sg") as ec2.ISecurityGroup | undefined) ??
    ec2.SecurityGroup.fromSecurityGroupId(stack, "Sg", "sg-1");
  return {
    clusterArn: CONTEXT_DEFAULTS.mskClusterArn,
    bootstrapBrokers: "b-1:9098",
    kind: "provisioned",
    vpc,
    subnets: { subnets: vpc.privateSubnets },
    securityGroup,
  };
}
function kafkaConsumer(stack: Stack, cluster: MskClusterRef): ConsumerFunction {
  return new ConsumerFunction(stack, "P", {
    entry: STUB_ENTRY,
    vpc: cluster.vpc,
    vpcSubnets: cluster.subnets,
    securityGroups: [cluster.securityGroup],
  });
}

describe("Kafka mappings: the library decides the fate of every record, Lambda isolates a crashing one", () => {
  const mappingsOf = (stack: Stack) =>
    Object.values(Template.fromStack(stack).findResources("AWS::Lambda::EventSourceMapping"));

  it("maps every ladder topic in provisioned mode: partial batch responses, bisect, a finite limit, kafka://<DLQ>", () => {
    // Issue 26 item 4: the mappings retried without limit and had no destination, so a record that
    // crashed the function (out of memory, a timeout) blocked its partition forever; retry topics
    // did not even bisect.
    const app = testApp();
    const stack = new Stack(app, "S");
    kafkaConsumer(stack, clusterIn(stack)).addMskTrigger(clusterIn(stack), ladder);
    app.synth();
    const mappings = mappingsOf(stack);
    expect(mappings).toHaveLength(2);
    for (const m of mappings) {
      expect(m.Properties.FunctionResponseTypes).toEqual(["ReportBatchItemFailures"]);
      expect(m.Properties.ProvisionedPollerConfig).toEqual({ MinimumPollers: 1, MaximumPollers: 2 });
      expect(m.Properties.BisectBatchOnFunctionError).toBe(true);
      expect(m.Properties.DestinationConfig).toEqual({ OnFailure: { Destination: "kafka://events.DLQ" } });
      expect(m.Properties.MaximumRecordAgeInSeconds).toBeUndefined();
    }
    // The 1-minute rung with a 30 s function: each invocation waits ≤ 25 s, so a healthy record is
    // handed back up to 3 times before it is due; 10 more for everything else.
    const retries = Object.fromEntries(
      mappings.map((m) => [m.Properties.Topics[0], m.Properties.MaximumRetryAttempts]),
    );
    expect(retries).toEqual({ events: 10, "events.retry.1m": 13 });
  });

  it("grants the function WriteData on the dead-letter topic: Lambda writes its destination with that role", () => {
    const app = testApp();
    const stack = new Stack(app, "S");
    kafkaConsumer(stack, clusterIn(stack)).addMskTrigger(clusterIn(stack), ladder);
    const statements = Object.values(Template.fromStack(stack).findResources("AWS::IAM::Policy")).flatMap(
      (p) => p.Properties.PolicyDocument.Statement as Array<{ Action: string | string[]; Resource: unknown }>,
    );
    const writes = statements.filter((st) => [st.Action].flat().includes("kafka-cluster:WriteData"));
    expect(JSON.stringify(writes.map((w) => w.Resource))).toMatch(/topic\/[^"]*\/events\.DLQ"/);
  });

  it("fails synth when a mapping of the consumer is changed to drop or block records (escape hatch)", () => {
    const cases: Array<[string, (cfn: lambda.CfnEventSourceMapping) => void]> = [
      [
        "KafkaMappingDeadLettersUnfinishedRecords",
        (cfn) => {
          cfn.destinationConfig = { onFailure: { destination: "arn:aws:sqs:us-east-1:111122223333:q" } };
        },
      ],
      [
        "KafkaMappingDeadLettersUnfinishedRecords",
        (cfn) => {
          cfn.maximumRecordAgeInSeconds = 3600;
        },
      ],
      [
        "KafkaMappingBlocksOnCrash",
        (cfn) => {
          cfn.maximumRetryAttempts = -1;
          cfn.destinationConfig = undefined;
        },
      ],
      [
        "KafkaMappingWithoutBisect",
        (cfn) => {
          cfn.bisectBatchOnFunctionError = false;
        },
      ],
      [
        "KafkaDestinationIsSource",
        (cfn) => {
          cfn.destinationConfig = { onFailure: { destination: "kafka://events" } };
        },
      ],
    ];
    for (const [code, change] of cases) {
      const app = testApp();
      const stack = new Stack(app, "S");
      const [main] = kafkaConsumer(stack, clusterIn(stack)).addMskTrigger(clusterIn(stack), ladder);
      change(main!.node.defaultChild as lambda.CfnEventSourceMapping);
      expect(
        ruleCodeOf(() => app.synth()),
        code,
      ).toBe(code);
    }
  });

  it("refuses a second mapping of one consumer on a topic: a record's coordinates hold its dedup lease", () => {
    const app = testApp();
    const stack = new Stack(app, "S");
    const fn = kafkaConsumer(stack, clusterIn(stack));
    fn.addMskTrigger(clusterIn(stack), ladder);
    fn.function.addEventSource(
      new ManagedKafkaEventSource({
        clusterArn: CONTEXT_DEFAULTS.mskClusterArn,
        topic: "events",
        consumerGroupId: "other-group",
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        provisionedPollerConfig: { minimumPollers: 1, maximumPollers: 1 },
        reportBatchItemFailures: true,
        bisectBatchOnError: true,
        retryAttempts: 10,
        onFailure: new KafkaDlq("events.DLQ"),
      }),
    );
    expect(ruleCodeOf(() => app.synth())).toBe("KafkaTopicMappedTwice");
  });

  it("refuses a retry limit a healthy record could use up while it waits for its rung", () => {
    const stack = new Stack(testApp(), "S");
    const fn = kafkaConsumer(stack, clusterIn(stack));
    fn.addMskTrigger(clusterIn(stack), { ...ladder, retryDelaysSeconds: [600] }, { retryAttempts: 5 });
    // 600 s with a 30 s function: up to 24 hand-backs before it is due.
    expect(ruleCodeOf(() => Template.fromStack(stack))).toBe("KafkaRetriesBelowWaits");
  });

  it("fails synth on a Kafka mapping added by hand without provisioned mode, naming the schema registry when it has one", () => {
    for (const [code, registry] of [
      ["KafkaMappingNotProvisioned", false],
      ["KafkaSchemaRegistryNeedsProvisionedMode", true],
    ] as const) {
      const app = testApp();
      const stack = new Stack(app, "S");
      const fn = kafkaConsumer(stack, clusterIn(stack));
      const source = new ManagedKafkaEventSource({
        clusterArn: CONTEXT_DEFAULTS.mskClusterArn,
        topic: "events",
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
      });
      fn.function.addEventSource(source);
      if (registry) {
        const cfn = fn.function.node.children
          .flatMap((c) => c.node.children)
          .find((c): c is lambda.CfnEventSourceMapping => c instanceof lambda.CfnEventSourceMapping)!;
        cfn.amazonManagedKafkaEventSourceConfig = {
          schemaRegistryConfig: { schemaRegistryUri: "https://registry.example", eventRecordFormat: "JSON" },
        };
      }
      expect(
        ruleCodeOf(() => app.synth()),
        code,
      ).toBe(code);
    }
  });

  it("takes provisioned pollers with a poller group, checked against AWS's ranges", () => {
    const app = testApp();
    const stack = new Stack(app, "S");
    kafkaConsumer(stack, clusterIn(stack)).addMskTrigger(clusterIn(stack), ladder, {
      provisionedPollers: { minimumPollers: 2, maximumPollers: 20, pollerGroupName: "payments-pollers" },
    });
    for (const m of mappingsOf(stack)) {
      expect(m.Properties.ProvisionedPollerConfig).toEqual({
        MinimumPollers: 2,
        MaximumPollers: 20,
        PollerGroupName: "payments-pollers",
      });
    }
    const bad = (provisionedPollers: {
      minimumPollers: number;
      maximumPollers: number;
      pollerGroupName?: string;
    }) => {
      const s = new Stack(testApp(), "S");
      return ruleCodeOf(() =>
        kafkaConsumer(s, clusterIn(s)).addMskTrigger(clusterIn(s), ladder, { provisionedPollers }),
      );
    };
    expect(bad({ minimumPollers: 0, maximumPollers: 2 })).toBe("MskPollersOutOfRange");
    expect(bad({ minimumPollers: 1, maximumPollers: 2001 })).toBe("MskPollersOutOfRange");
    expect(bad({ minimumPollers: 1, maximumPollers: 2, pollerGroupName: "no spaces" })).toBe(
      "MskPollerGroupInvalid",
    );
    expect(bad({ minimumPollers: 1, maximumPollers: 2, pollerGroupName: "g".repeat(129) })).toBe(
      "MskPollerGroupInvalid",
    );
    // Two mappings (main + one rung) of 1,500 maximum pollers each exceed a group's 2,000.
    expect(bad({ minimumPollers: 1, maximumPollers: 1500, pollerGroupName: "g" })).toBe(
      "MskPollerGroupInvalid",
    );
  });
});

describe("SQS triggers in provisioned mode", () => {
  const queueAndConsumer = () => {
    const app = testApp();
    const stack = new Stack(app, "S");
    const fn = consumer(stack, "C", Duration.seconds(30));
    const q = new QueueWithDlq(stack, "Q", { consumerTimeout: Duration.seconds(30) });
    return { app, stack, fn, q };
  };
  const mappingOf = (stack: Stack) =>
    Object.values(Template.fromStack(stack).findResources("AWS::Lambda::EventSourceMapping"))[0]!;

  it("sets ProvisionedPollerConfig and leaves out MaximumConcurrency (Lambda takes one or the other)", () => {
    const { stack, fn, q } = queueAndConsumer();
    fn.addSqsTrigger(q, { provisionedPollers: { minimumPollers: 2, maximumPollers: 50 } });
    const m = mappingOf(stack);
    expect(m.Properties.ProvisionedPollerConfig).toEqual({ MinimumPollers: 2, MaximumPollers: 50 });
    expect(m.Properties.ScalingConfig).toBeUndefined();
    expect(m.Properties.FunctionResponseTypes).toEqual(["ReportBatchItemFailures"]);
  });

  it("takes AWS's range up to 10,000 maximum pollers (aws-cdk-lib still stops at 2,000)", () => {
    const { stack, fn, q } = queueAndConsumer();
    fn.addSqsTrigger(q, { provisionedPollers: { minimumPollers: 10, maximumPollers: 5000 } });
    expect(mappingOf(stack).Properties.ProvisionedPollerConfig).toEqual({
      MinimumPollers: 10,
      MaximumPollers: 5000,
    });
  });

  it("refuses pollers out of range, and pollers together with maxConcurrency", () => {
    const code = (o: Parameters<ConsumerFunction["addSqsTrigger"]>[1]) => {
      const { fn, q } = queueAndConsumer();
      return ruleCodeOf(() => fn.addSqsTrigger(q, o));
    };
    expect(code({ provisionedPollers: { minimumPollers: 1, maximumPollers: 5 } })).toBe(
      "SqsPollersOutOfRange",
    );
    expect(code({ provisionedPollers: { minimumPollers: 201, maximumPollers: 300 } })).toBe(
      "SqsPollersOutOfRange",
    );
    expect(code({ provisionedPollers: { minimumPollers: 2, maximumPollers: 10_001 } })).toBe(
      "SqsPollersOutOfRange",
    );
    expect(code({ provisionedPollers: { minimumPollers: 5, maximumPollers: 4 } })).toBe(
      "SqsPollersOutOfRange",
    );
    expect(code({ provisionedPollers: { minimumPollers: 2, maximumPollers: 4 }, maxConcurrency: 10 })).toBe(
      "SqsProvisionedWithMaxConcurrency",
    );
  });
});

describe("AWS Control Tower controls at synth", () => {
  it("fails synth on a finding nobody acknowledged, next to acknowledged ones", APP_SYNTH, () => {
    const { app, stack } = buildApp(testApp());
    // An alarm that notifies nobody (CT.CLOUDWATCH.PR.1), outside ConsumerMonitoring.
    new cloudwatch.Alarm(stack, "Bare", {
      metric: new cloudwatch.Metric({ namespace: "N", metricName: "M" }),
      threshold: 1,
      evaluationPeriods: 1,
    });
    expect(() => app.synth()).toThrow(/CT\.CLOUDWATCH\.PR\.1[\s\S]*R?eliableConsumersReference\/Bare/);
  });
});

describe("variants of the reference app", () => {
  it(
    "MSK Serverless: topics through the admin custom resource, no AWS::MSK::Topic, nag-clean",
    APP_SYNTH,
    () => {
      const { app, stack } = buildApp(testApp({ mskClusterKind: "serverless" }));
      const assembly = app.synth();
      expect(findingsOf(new AwsSolutionsChecks().validateScope(stack))).toEqual([]);
      expect(validationReport(assembly.directory, GUARD_PLUGIN).violations).toEqual([]);
      const t = Template.fromStack(stack);
      t.resourceCountIs("AWS::MSK::Topic", 0);
      const topics = Object.values(t.findResources("Custom::KafkaTopic")).map((r) => r.Properties.Topic);
      expect(topics.map((x) => x.Name).sort()).toEqual([
        "order-events",
        "order-events.DLQ",
        "order-events.retry.10m",
        "order-events.retry.1m",
        "order-events.retry.5s",
      ]);
      for (const topic of topics) {
        expect(topic.Partitions).toBe(6);
        expect(topic.Configs["min.insync.replicas"]).toBeUndefined(); // fixed by MSK Serverless
        expect(topic.Configs["retention.ms"]).toBeDefined();
      }
      const admin = Object.entries(t.findResources("AWS::IAM::Policy")).find(([id]) =>
        id.startsWith("TopicsAdmin"),
      )!;
      const actions = admin[1].Properties.PolicyDocument.Statement.flatMap(
        (s: { Action: string[] }) => s.Action,
      );
      expect(actions).toEqual(
        expect.arrayContaining(["kafka-cluster:CreateTopic", "kafka-cluster:AlterTopic"]),
      );
    },
  );

  it(
    "createMskCluster: a provisioned IAM/TLS cluster in a new VPC with endpoints, nag-clean",
    APP_SYNTH,
    () => {
      const { app, stack } = buildApp(testApp({ createMskCluster: true }));
      const assembly = app.synth();
      expect(findingsOf(new AwsSolutionsChecks().validateScope(stack))).toEqual([]);
      expect(validationReport(assembly.directory, GUARD_PLUGIN).violations).toEqual([]);
      const t = Template.fromStack(stack);
      t.hasResourceProperties("AWS::MSK::Cluster", {
        KafkaVersion: "3.6.0",
        ClientAuthentication: { Sasl: { Iam: { Enabled: true } }, Unauthenticated: { Enabled: false } },
        EncryptionInfo: { EncryptionInTransit: { ClientBroker: "TLS", InCluster: true } },
      });
      t.resourceCountIs("AWS::EC2::NatGateway", 0);
      t.resourceCountIs("AWS::EC2::VPCEndpoint", 5);
      t.resourceCountIs("AWS::MSK::Topic", 5);
    },
  );
});
