import { CreateRegistryCommand, GlueClient } from "@aws-sdk/client-glue";
import { GlueSchemaRegistry, SchemaCompatibilityType, SchemaType } from "@meinestadt.de/glue-schema-registry";
import avsc from "avsc";
import protobufjs from "protobufjs";
import { SchemaValidationError } from "reliable-consumers";
import {
  avro,
  avroEncoder,
  glueRegistry,
  jsonSchema,
  jsonSchemaEncoder,
  protobuf,
  protobufEncoder,
  readGlueFrame,
  SchemaRegistryUnavailableError,
  UndecodableRecordError,
  UnknownSchemaError,
} from "reliable-consumers/kafka";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WireFormatError } from "../../lib/kafka/schemas/errors.ts";
import { writeGlueFrame } from "../../lib/kafka/schemas/wireFormat.ts";
import { PaymentV1, PaymentV2 } from "../fixtures/schemas/payment.ts";
import { type MotoServer, startMotoServer } from "../support/motoServer.ts";

// AWS Glue Schema Registry through its real API, served by moto on 127.0.0.1 (not a stand-in).
// The Glue framing is written by the library's encoder, checked against the golden fixture in
// test/unit/kafkaWireFormat.test.ts, and against a third-party Glue SerDe for JavaScript,
// @meinestadt.de/glue-schema-registry, in both directions (AWS's own SerDe is for Java and Python).

let moto: MotoServer;
let glue: GlueClient;
const getSchemaVersionCalls: string[] = [];
const REGISTRY = "payments-registry";

beforeAll(async () => {
  moto = await startMotoServer();
  glue = new GlueClient({
    endpoint: moto.endpoint,
    region: "eu-west-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
    maxAttempts: 1,
  });
  // Counts the requests that really reach Glue (the SDK's own middleware stack).
  glue.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === "GetSchemaVersionCommand") getSchemaVersionCalls.push(context.commandName);
      return next(args);
    },
    { step: "initialize", name: "countGetSchemaVersion" },
  );
  await glue.send(new CreateRegistryCommand({ RegistryName: REGISTRY }));
}, 60_000);
afterAll(() => moto?.stop());

describe("Avro with AWS Glue Schema Registry (moto)", () => {
  it("registers, frames, fetches by version UUID once, and resolves the writer into the reader", async () => {
    const registry = glueRegistry({ client: glue, registryName: REGISTRY });
    const v1 = avroEncoder({ registry, subject: "payments", schema: PaymentV1, register: true });
    const bytes = await v1.encode({ id: "p-1", amount: 5 });
    const frame = readGlueFrame(bytes);
    expect(frame.compression).toBe("none");
    const before = getSchemaVersionCalls.length;
    const reader = avro({ registry: glueRegistry({ client: glue }), schema: PaymentV2 });
    const out = await Promise.all(Array.from({ length: 20 }, () => reader.decode(bytes)));
    expect(out.map((o) => ({ ...(o as object) }))).toEqual(
      Array.from({ length: 20 }, () => ({ id: "p-1", amount: 5, currency: "EUR" })),
    );
    expect(getSchemaVersionCalls.length - before).toBe(1);
    // Looking up (not registering) finds the same version for the same definition.
    expect(
      await registry.idFor(
        { subject: "payments", format: "AVRO", definition: JSON.stringify(PaymentV1) },
        { register: false },
      ),
    ).toBe(frame.schemaVersionId);
  });

  it("bad input: an unknown version UUID, another header byte, undecodable bytes; Glue unreachable is transient", async () => {
    const registry = glueRegistry({ client: glue, registryName: REGISTRY });
    const bytes = await avroEncoder({
      registry,
      subject: "payments",
      schema: PaymentV1,
      register: true,
    }).encode({ id: "x", amount: 1 });
    const decoder = avro({ registry: glueRegistry({ client: glue }) });
    await expect(
      decoder.decode(writeGlueFrame("00000000-0000-4000-8000-000000000000", bytes.subarray(18))),
    ).rejects.toBeInstanceOf(UnknownSchemaError);
    const other = Buffer.from(bytes);
    other[0] = 0;
    await expect(decoder.decode(other)).rejects.toBeInstanceOf(WireFormatError);
    await expect(decoder.decode(bytes.subarray(0, bytes.length - 1))).rejects.toBeInstanceOf(
      UndecodableRecordError,
    );
    const nowhere = new GlueClient({
      endpoint: "http://127.0.0.1:9",
      region: "eu-west-1",
      credentials: { accessKeyId: "test", secretAccessKey: "test" },
      maxAttempts: 1,
    });
    const error = await avro({ registry: glueRegistry({ client: nowhere }) })
      .decode(bytes)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SchemaRegistryUnavailableError);
    expect((error as { kind: string }).kind).toBe("transient");
  });

  it("EntityNotFoundException is 'unknown schema' only while the registry exists; denied access is transient", async () => {
    // Issue 26 item 2: Glue answers EntityNotFoundException for a schema looked up in a registry
    // that does not exist (a wrong GLUE_SCHEMA_REGISTRY_NAME), which dead-lettered every event.
    const schema = { subject: "payments", format: "AVRO" as const, definition: JSON.stringify(PaymentV1) };
    const missing = glueRegistry({ client: glue, registryName: "no-such-registry" });
    for (const register of [false, true]) {
      const error = await missing.idFor(schema, { register }).catch((e: unknown) => e);
      expect(error, `register: ${register}`).toBeInstanceOf(SchemaRegistryUnavailableError);
    }
    const unknownVersion = writeGlueFrame("00000000-0000-4000-8000-00000000abcd", Buffer.from([2, 120, 2]));
    await expect(avro({ registry: missing }).decode(unknownVersion)).rejects.toBeInstanceOf(
      SchemaRegistryUnavailableError,
    );
    // The registry exists: Glue's "not found" is an answer about the schema.
    const present = glueRegistry({ client: glue, registryName: REGISTRY });
    await expect(avro({ registry: present }).decode(unknownVersion)).rejects.toBeInstanceOf(
      UnknownSchemaError,
    );
    await expect(
      present.idFor({ ...schema, subject: "never-registered" }, { register: false }),
    ).rejects.toBeInstanceOf(UnknownSchemaError);
    // AccessDeniedException (and throttling, 5xx) is the deployment's or Glue's, never the record's.
    const denied = new GlueClient({
      endpoint: moto.endpoint,
      region: "eu-west-1",
      credentials: { accessKeyId: "test", secretAccessKey: "test" },
      maxAttempts: 1,
    });
    denied.middlewareStack.add(
      () => async () => {
        throw Object.assign(new Error("User is not authorized to perform: glue:GetSchemaVersion"), {
          name: "AccessDeniedException",
          $fault: "client",
        });
      },
      { step: "finalizeRequest", name: "denyEverything" },
    );
    for (const registry of [
      glueRegistry({ client: denied }),
      glueRegistry({ client: denied, registryName: REGISTRY }),
    ]) {
      await expect(avro({ registry }).decode(unknownVersion)).rejects.toBeInstanceOf(
        SchemaRegistryUnavailableError,
      );
      await expect(registry.idFor(schema, { register: false })).rejects.toBeInstanceOf(
        SchemaRegistryUnavailableError,
      );
    }
  });
});

/**
 * A Glue client on moto whose answers carry the statuses given, in order, per command (moto's own
 * versions are AVAILABLE at once): Glue's compatibility check brought about by count, not by time.
 */
function glueAnswering(statuses: { register?: string[]; getVersion?: string[] }) {
  const client = new GlueClient({
    endpoint: moto.endpoint,
    region: "eu-west-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
    maxAttempts: 1,
  });
  const calls = { register: 0, getVersion: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      const output = out.output as { Status?: string };
      const which =
        context.commandName === "RegisterSchemaVersionCommand"
          ? "register"
          : context.commandName === "GetSchemaVersionCommand"
            ? "getVersion"
            : undefined;
      if (which) {
        const status = statuses[which]?.[calls[which]++];
        if (status) output.Status = status;
      }
      return out;
    },
    { step: "initialize", name: "glueStatuses" },
  );
  return { client, calls };
}

describe("Glue's compatibility check: a version is written with only once it is AVAILABLE (issue 26 item 2)", () => {
  const subject = { subject: "payments-checked", format: "AVRO" as const };
  const v1 = { ...subject, definition: JSON.stringify(PaymentV1) };
  const v2 = { ...subject, definition: JSON.stringify(PaymentV2) };

  it("a PENDING version is polled with GetSchemaVersion until AVAILABLE", async () => {
    await glueRegistry({ client: glue, registryName: REGISTRY }).idFor(v1, { register: true });
    const { client, calls } = glueAnswering({ register: ["PENDING"], getVersion: ["PENDING", "PENDING"] });
    const registry = glueRegistry({ client, registryName: REGISTRY, pendingPollsMs: [0, 0, 0] });
    const id = await registry.idFor(v2, { register: true });
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    // Two PENDING answers, then moto's own AVAILABLE.
    expect(calls.getVersion).toBe(3);
  });

  it("FAILURE (the definition breaks the compatibility mode) is UnknownSchemaError: nothing is framed with it", async () => {
    const { client } = glueAnswering({ register: ["FAILURE"] });
    const registry = glueRegistry({ client, registryName: REGISTRY });
    await expect(registry.idFor(v2, { register: true })).rejects.toBeInstanceOf(UnknownSchemaError);
    const refusing = glueRegistry({
      client: glueAnswering({ register: ["FAILURE"] }).client,
      registryName: REGISTRY,
    });
    const encoder = avroEncoder({
      registry: refusing,
      subject: subject.subject,
      schema: PaymentV2,
      register: true,
    });
    await expect(encoder.encode({ id: "p-9", amount: 1 })).rejects.toThrow(/FAILURE/);
  });

  it("a check still PENDING after the polls is SchemaRegistryUnavailableError (transient), and the next record asks again", async () => {
    const { client, calls } = glueAnswering({
      register: ["PENDING", "PENDING"],
      getVersion: ["PENDING", "PENDING"],
    });
    const registry = glueRegistry({ client, registryName: REGISTRY, pendingPollsMs: [0, 0] });
    await expect(registry.idFor(v2, { register: true })).rejects.toBeInstanceOf(
      SchemaRegistryUnavailableError,
    );
    expect(calls.getVersion).toBe(2);
    // Not remembered as broken: the second try registers again and, AVAILABLE this time, succeeds.
    await expect(registry.idFor(v2, { register: true })).resolves.toMatch(/^[0-9a-f-]{36}$/);
    expect(calls.register).toBe(2);
  });
});

const ORDER_PROTO = `syntax = "proto3";
package shop;
message Order { string id = 1; int64 cents = 2; }`;

describe("Protobuf and JSON Schema with AWS Glue Schema Registry (moto)", () => {
  it("round-trips Protobuf with the registry's .proto and JSON with the registry's JSON Schema", async () => {
    const registry = glueRegistry({ client: glue, registryName: REGISTRY });
    const Order = protobufjs.parse(ORDER_PROTO).root.lookupType("shop.Order");
    const pb = await protobufEncoder({
      registry,
      subject: "orders",
      type: Order,
      definition: ORDER_PROTO,
      register: true,
    }).encode({
      id: "o-1",
      cents: 250,
    });
    expect(await protobuf({ registry: glueRegistry({ client: glue }) }).decode(pb)).toEqual({
      id: "o-1",
      cents: "250",
    });

    const schema = {
      type: "object",
      properties: { id: { type: "string" } },
      required: ["id"],
      additionalProperties: false,
    };
    const js = await jsonSchemaEncoder({ registry, subject: "events", schema, register: true }).encode({
      id: "e-1",
    });
    const reader = jsonSchema({ registry: glueRegistry({ client: glue }) });
    expect(await reader.decode(js)).toEqual({ id: "e-1" });
    const invalid = writeGlueFrame(readGlueFrame(js).schemaVersionId, Buffer.from('{"id":1}'));
    await expect(reader.decode(invalid)).rejects.toBeInstanceOf(SchemaValidationError);
  });
});

describe("Avro interop with a Glue SerDe of another vendor (@meinestadt.de/glue-schema-registry)", () => {
  const vendor = () =>
    new GlueSchemaRegistry(REGISTRY, {
      endpoint: moto.endpoint,
      region: "eu-west-1",
      credentials: { accessKeyId: "test", secretAccessKey: "test" },
      maxAttempts: 1,
    });

  it("decodes what their encoder frames, plain and zlib-compressed, resolving their writer into our reader", async () => {
    const theirs = vendor();
    const versionId = await theirs.createSchema({
      type: SchemaType.AVRO,
      schemaName: "vendor-payments",
      compatibility: SchemaCompatibilityType.BACKWARD,
      schema: JSON.stringify(PaymentV1),
    });
    if (!versionId) throw new Error("the vendor SerDe registered no schema version");
    const reader = avro({ registry: glueRegistry({ client: glue }), schema: PaymentV2 });
    for (const compress of [false, true]) {
      const bytes = await theirs.encode(versionId, { id: "v-1", amount: 7 }, { compress });
      expect(readGlueFrame(bytes)).toMatchObject({
        schemaVersionId: versionId,
        compression: compress ? "zlib" : "none",
      });
      expect({ ...((await reader.decode(bytes)) as object) }).toEqual({
        id: "v-1",
        amount: 7,
        currency: "EUR",
      });
    }
  });

  it("their decoder reads what our encoder frames", async () => {
    const ours = avroEncoder({
      registry: glueRegistry({ client: glue, registryName: REGISTRY }),
      subject: "vendor-refunds",
      schema: PaymentV1,
      register: true,
    });
    const bytes = await ours.encode({ id: "r-1", amount: 3 });
    const theirs = vendor();
    const analysis = await theirs.analyzeMessage(bytes);
    expect(analysis).toMatchObject({ valid: true, schemaId: readGlueFrame(bytes).schemaVersionId });
    expect({
      ...(await theirs.decode<object>(bytes, avsc.Type.forSchema(PaymentV1 as avsc.Schema))),
    }).toEqual({
      id: "r-1",
      amount: 3,
    });
  });
});
