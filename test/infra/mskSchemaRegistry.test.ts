import { Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import type { MskClusterRef, MskSchemaRegistry } from "reliable-consumers/cdk";
import { ConsumerFunction } from "reliable-consumers/cdk";
import { describe, expect, it } from "vitest";
import { STUB_ENTRY } from "../../infra/stacks/referenceServiceStack.ts";
import { testApp } from "./synthHelpers.ts";

// Issue 16 item 2: addMskTrigger's schemaRegistry synthesizes SchemaRegistryConfig (inside
// AmazonManagedKafkaEventSourceConfig, where CloudFormation has it) on every mapping
// of the trigger (main and retry topics) with its grants and the environment the consumer reads.

function synth(schemaRegistry: MskSchemaRegistry | ((stack: Stack) => MskSchemaRegistry)) {
  const stack = new Stack(testApp(), "S", { env: { account: "111122223333", region: "eu-west-1" } });
  const vpc = ec2.Vpc.fromVpcAttributes(stack, "Vpc", {
    vpcId: "vpc-1",
    availabilityZones: ["eu-west-1a"],
    privateSubnetIds: ["subnet-1"],
  });
  const cluster: MskClusterRef = {
    clusterArn: "arn:aws:kafka:eu-west-1:111122223333:cluster/c/abc",
    bootstrapBrokers: "b-1:9098",
    kind: "provisioned",
    vpc,
    subnets: { subnets: vpc.privateSubnets },
    securityGroup: ec2.SecurityGroup.fromSecurityGroupId(stack, "Sg", "sg-1"),
  };
  new ConsumerFunction(stack, "K", {
    entry: STUB_ENTRY,
    vpc,
    vpcSubnets: cluster.subnets,
    securityGroups: [cluster.securityGroup],
  }).addMskTrigger(
    cluster,
    { topic: "payments", retryDelaysSeconds: [60], partitions: 3 },
    { schemaRegistry: typeof schemaRegistry === "function" ? schemaRegistry(stack) : schemaRegistry },
  );
  return Template.fromStack(stack);
}

const policyActions = (t: Template) =>
  Object.values(t.findResources("AWS::IAM::Policy")).flatMap((p) =>
    (p.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[]).map(
      (s) => ({
        actions: ([] as string[]).concat(s.Action),
        resource: s.Resource,
      }),
    ),
  );

/** The function may read the registry secret, and its client finds the URL and the secret's ARN. */
function expectConfluentSecretAndEnv(t: Template, moreEnv: Record<string, unknown> = {}) {
  const read = policyActions(t).find((s) => s.actions.includes("secretsmanager:GetSecretValue"));
  expect(read?.resource).toEqual({ Ref: expect.stringMatching(/RegistryCredentials/) });
  t.hasResourceProperties("AWS::Lambda::Function", {
    Environment: {
      Variables: Match.objectLike({
        SCHEMA_REGISTRY_URL: "https://registry.example.com",
        SCHEMA_REGISTRY_SECRET_ARN: { Ref: Match.stringLikeRegexp("RegistryCredentials") },
        ...moreEnv,
      }),
    },
  });
}

describe("addMskTrigger({ schemaRegistry })", () => {
  it("Glue: SchemaRegistryConfig on the main topic's mapping only, glue:GetSchemaVersion granted, the mode in the environment", () => {
    const t = synth({
      kind: "glue",
      registryArn: "arn:aws:glue:eu-west-1:111122223333:registry/payments",
      eventRecordFormat: "SOURCE",
      validate: ["KEY", "VALUE"],
    });
    const mappings = t.findResources("AWS::Lambda::EventSourceMapping");
    expect(Object.keys(mappings)).toHaveLength(2); // payments and payments.retry.1m
    // The retry topic's copies carry what the function got, which a registry could not read
    // (issue 34 item 1): its mapping has none.
    const rung = Object.values(mappings).find((m) => m.Properties.Topics[0] === "payments.retry.1m")!;
    expect(rung.Properties.AmazonManagedKafkaEventSourceConfig.SchemaRegistryConfig).toBeUndefined();
    expect(rung.Properties.ProvisionedPollerConfig).toBeDefined();
    for (const m of Object.values(mappings).filter((m) => m !== rung)) {
      expect(m.Properties.AmazonManagedKafkaEventSourceConfig.SchemaRegistryConfig).toEqual({
        SchemaRegistryURI: "arn:aws:glue:eu-west-1:111122223333:registry/payments",
        EventRecordFormat: "SOURCE",
        SchemaValidationConfigs: [{ Attribute: "KEY" }, { Attribute: "VALUE" }],
      });
      expect(m.Properties.ProvisionedPollerConfig).toBeDefined(); // registries need provisioned mode
    }
    const actions = policyActions(t).flatMap((s) => s.actions);
    expect(actions).toEqual(expect.arrayContaining(["glue:GetSchemaVersion", "glue:GetRegistry"]));
    // The mapping looks frames up by schema version id, which IAM matches only against "*" (issue 21).
    expect(policyActions(t)).toContainEqual({ actions: ["glue:GetSchemaVersion"], resource: "*" });
    t.hasResourceProperties("AWS::Lambda::Function", {
      Environment: {
        Variables: Match.objectLike({
          KAFKA_SCHEMA_REGISTRY_EVENT_RECORD_FORMAT: "SOURCE",
          KAFKA_SCHEMA_REGISTRY_ATTRIBUTES: "KEY,VALUE",
          GLUE_SCHEMA_REGISTRY_NAME: "payments",
        }),
      },
    });
  });

  it("Confluent: the URL, BASIC_AUTH with the secret, which the function may read", () => {
    const t = synth((stack) => ({
      kind: "confluent",
      url: "https://registry.example.com",
      secret: new secretsmanager.Secret(stack, "RegistryCredentials"),
    }));
    const mappings = Object.values(t.findResources("AWS::Lambda::EventSourceMapping"));
    expect(
      mappings.filter((m) => m.Properties.AmazonManagedKafkaEventSourceConfig.SchemaRegistryConfig),
    ).toHaveLength(1);
    for (const m of mappings.filter((m) => m.Properties.Topics[0] === "payments")) {
      expect(m.Properties.AmazonManagedKafkaEventSourceConfig.SchemaRegistryConfig).toMatchObject({
        SchemaRegistryURI: "https://registry.example.com",
        EventRecordFormat: "JSON",
        SchemaValidationConfigs: [{ Attribute: "VALUE" }],
        AccessConfigs: [{ Type: "BASIC_AUTH", URI: { Ref: expect.stringMatching(/^RegistryCredentials/) } }],
      });
    }
    expectConfluentSecretAndEnv(t, { KAFKA_SCHEMA_REGISTRY_EVENT_RECORD_FORMAT: "JSON" });
  });

  it("refuses a plaintext Confluent URL, a non-registry Glue ARN and an empty attribute list", () => {
    expect(() => synth({ kind: "confluent", url: "http://registry.example.com" })).toThrow(/must be https/);
    expect(() =>
      synth({ kind: "glue", registryArn: "arn:aws:glue:eu-west-1:111122223333:schema/x/y" }),
    ).toThrow(/not a Glue registry ARN/);
    expect(() =>
      synth({ kind: "glue", registryArn: "arn:aws:glue:eu-west-1:111122223333:registry/p", validate: [] }),
    ).toThrow(/needs KEY, VALUE or both/);
  });
});

describe("useSchemaRegistry (the function's own registry client: the relay producing, a consumer decoding)", () => {
  function fn() {
    const stack = new Stack(testApp(), "P", { env: { account: "111122223333", region: "eu-west-1" } });
    return { stack, fn: new ConsumerFunction(stack, "Producer", { entry: STUB_ENTRY }) };
  }
  const registryArn = "arn:aws:glue:eu-west-1:111122223333:registry/payments";
  const glueStatement = (t: Template) =>
    policyActions(t).find((s) => s.actions.some((a) => a.startsWith("glue:")));

  it("Glue, looking schemas up: read actions on the registry and its schemas, the registry name in the environment", () => {
    const { stack, fn: f } = fn();
    f.useSchemaRegistry({ kind: "glue", registryArn });
    const t = Template.fromStack(stack);
    const s = glueStatement(t);
    expect(s?.actions.sort()).toEqual([
      "glue:GetRegistry",
      "glue:GetSchemaByDefinition",
      "glue:GetSchemaVersion",
    ]);
    expect(s?.resource).toEqual([registryArn, "arn:aws:glue:eu-west-1:111122223333:schema/payments/*"]);
    // Decoding a frame is GetSchemaVersion by SchemaVersionId: only Resource "*" matches it (issue 21).
    expect(policyActions(t)).toContainEqual({ actions: ["glue:GetSchemaVersion"], resource: "*" });
    t.hasResourceProperties("AWS::Lambda::Function", {
      Environment: { Variables: Match.objectLike({ GLUE_SCHEMA_REGISTRY_NAME: "payments" }) },
    });
  });

  it("Glue, registering: RegisterSchemaVersion and CreateSchema as well", () => {
    const { stack, fn: f } = fn();
    f.useSchemaRegistry({ kind: "glue", registryArn, register: true });
    expect(glueStatement(Template.fromStack(stack))?.actions).toEqual(
      expect.arrayContaining([
        "glue:RegisterSchemaVersion",
        "glue:CreateSchema",
        "glue:GetSchemaByDefinition",
      ]),
    );
  });

  it("Confluent: read on the secret, the URL and the secret's ARN in the environment; https only", () => {
    const { stack, fn: f } = fn();
    f.useSchemaRegistry({
      kind: "confluent",
      url: "https://registry.example.com",
      secret: new secretsmanager.Secret(stack, "RegistryCredentials"),
    });
    expectConfluentSecretAndEnv(Template.fromStack(stack));
    expect(() =>
      fn().fn.useSchemaRegistry({ kind: "confluent", url: "http://registry.example.com" }),
    ).toThrow(/SchemaRegistryNotTls/);
    expect(() =>
      fn().fn.useSchemaRegistry({
        kind: "glue",
        registryArn: "arn:aws:glue:eu-west-1:111122223333:schema/x/y",
      }),
    ).toThrow(/SchemaRegistryInvalid/);
  });
});
