import {
  type AttributeDefinition,
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  ResourceInUseException,
  type TableDescription,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import { resolveValue } from "../../runtime/intrinsics.ts";
import type { ResourceMaterialiser } from "../../runtime/materialiseState.ts";
import type { LocalTable } from "../../runtime/model.ts";

/** `AWS::DynamoDB::Table` (and `GlobalTable`) → a table on DynamoDB Local: keys, GSIs/LSIs, stream, TTL. */
export const materialiseTable: ResourceMaterialiser = async (id, r, s) => {
  const p = r.Properties ?? {};
  const name = s.physicalName(p.TableName, id, 255, `${id}.TableName`);
  const billing = String(p.BillingMode ?? "PROVISIONED");
  const throughput = (t: unknown) =>
    billing === "PAY_PER_REQUEST"
      ? {}
      : {
          ProvisionedThroughput: (t as CreateTableCommandInput["ProvisionedThroughput"]) ?? {
            ReadCapacityUnits: 5,
            WriteCapacityUnits: 5,
          },
        };
  const resolved = resolveValue(p, s.ctx, id) as Record<string, unknown>;
  const gsis = (resolved.GlobalSecondaryIndexes as Array<Record<string, unknown>> | undefined)?.map((g) => ({
    IndexName: g.IndexName as string,
    KeySchema: g.KeySchema as never,
    Projection: g.Projection as never,
    ...throughput(g.ProvisionedThroughput),
  }));
  const lsis = (resolved.LocalSecondaryIndexes as Array<Record<string, unknown>> | undefined)?.map((l) => ({
    IndexName: l.IndexName as string,
    KeySchema: l.KeySchema as never,
    Projection: l.Projection as never,
  }));
  const stream = resolved.StreamSpecification as { StreamViewType?: string } | undefined;
  const input: CreateTableCommandInput = {
    TableName: name,
    AttributeDefinitions: resolved.AttributeDefinitions as AttributeDefinition[],
    KeySchema: resolved.KeySchema as never,
    BillingMode: billing === "PAY_PER_REQUEST" ? "PAY_PER_REQUEST" : "PROVISIONED",
    ...throughput(resolved.ProvisionedThroughput),
    ...(gsis?.length ? { GlobalSecondaryIndexes: gsis } : {}),
    ...(lsis?.length ? { LocalSecondaryIndexes: lsis } : {}),
    ...(stream?.StreamViewType
      ? { StreamSpecification: { StreamEnabled: true, StreamViewType: stream.StreamViewType as never } }
      : {}),
  };
  if (resolved.SSESpecification || resolved.PointInTimeRecoverySpecification)
    s.note("DynamoDB encryption and point-in-time recovery are accepted and not emulated");
  let description: TableDescription | undefined;
  try {
    description = (await s.ddb.send(new CreateTableCommand(input))).TableDescription;
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
    s.note(`table ${name} already existed on the emulator; reused as is`);
    description = (await s.ddb.send(new DescribeTableCommand({ TableName: name }))).Table;
  }
  const ttl = resolved.TimeToLiveSpecification as { AttributeName?: string; Enabled?: boolean } | undefined;
  if (ttl?.Enabled && ttl.AttributeName) {
    await s.ddb
      .send(
        new UpdateTimeToLiveCommand({
          TableName: name,
          TimeToLiveSpecification: { AttributeName: ttl.AttributeName, Enabled: true },
        }),
      )
      .catch((e: Error) => {
        if (!/already enabled/i.test(e.message)) throw e;
      });
  }
  const t: LocalTable = {
    logicalId: id,
    name,
    arn: description?.TableArn ?? `arn:aws:dynamodb:${s.region}:${s.accountId}:table/${name}`,
    ...(description?.LatestStreamArn ? { streamArn: description.LatestStreamArn } : {}),
    ...(stream?.StreamViewType ? { streamViewType: stream.StreamViewType } : {}),
    ...(ttl?.Enabled && ttl.AttributeName ? { ttlAttribute: ttl.AttributeName } : {}),
  };
  s.tables.push(t);
  s.report.created.push({
    logicalId: id,
    type: "AWS::DynamoDB::Table",
    detail:
      name +
      [
        gsis?.length ? ` GSIs ${gsis.map((g) => g.IndexName).join(",")}` : "",
        t.streamArn ? ` stream ${t.streamViewType}` : "",
        t.ttlAttribute ? ` TTL ${t.ttlAttribute}` : "",
      ].join(""),
  });
  return { ref: name, attrs: { Arn: t.arn, ...(t.streamArn ? { StreamArn: t.streamArn } : {}) } };
};
