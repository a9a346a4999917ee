import { describe, expect, it } from "vitest";
import { actionRoutes, readRoutes } from "../../src/console/consoleRoutes.ts";
import { SERVICES } from "../../src/services/registry.ts";

const repeated = (names: readonly string[]) => names.filter((n, i) => names.indexOf(n) !== i);

describe("the service registry", () => {
  it("gives each CloudFormation type, gateway target and mapping kind to one service only", () => {
    const types = SERVICES.flatMap((s) => [
      ...Object.keys(s.resources ?? {}),
      ...Object.keys(s.deferred ?? {}),
    ]);
    expect(repeated(types)).toEqual([]);
    expect(types).toEqual(
      expect.arrayContaining([
        "AWS::SQS::Queue",
        "AWS::DynamoDB::Table",
        "AWS::MSK::Topic",
        "AWS::Kinesis::Stream",
        "AWS::Kinesis::StreamConsumer",
        "AWS::Lambda::Function",
        "AWS::Lambda::EventSourceMapping",
        "AWS::Events::Rule",
      ]),
    );
    expect(repeated(SERVICES.flatMap((s) => (s.gateway ?? []).map((g) => g.targetPrefix)))).toEqual([]);
    const kinds = SERVICES.flatMap((s) => (s.eventSources ?? []).map((e) => e.kind));
    expect([...kinds].sort()).toEqual(["dynamodb", "kafka", "kinesis", "sqs"]);
    expect(repeated(SERVICES.map((s) => s.name))).toEqual([]);
  });

  it("serves every service's console routes, each path once", () => {
    const paths = (routes: typeof readRoutes) =>
      [
        "api/queues",
        "api/kafka",
        "api/outbox",
        "api/dedup",
        "api/functions",
        "api/denials",
        "api/overview",
      ].filter((p) => routes.some((r) => r.match(p.split("/"))));
    expect(paths(readRoutes)).toHaveLength(7);
    const actions = ["redrive", "purge", "requeue", "replay"];
    for (const a of actions)
      expect(
        actionRoutes.filter((r) => r.match(["api", "actions", a])),
        a,
      ).toHaveLength(1);
  });
});
