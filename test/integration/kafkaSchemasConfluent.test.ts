import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { create, createFileRegistry, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import {
  AvroSerializer,
  JsonSerializer,
  ProtobufSerializer,
  SchemaRegistryClient,
  SerdeType,
} from "@confluentinc/schemaregistry";
import protobufjs from "protobufjs";
import "protobufjs/ext/descriptor/index.js";
import { SchemaValidationError } from "reliable-consumers";
import {
  avro,
  confluentRegistry,
  jsonSchema,
  protobuf,
  SchemaRegistryUnavailableError,
  UndecodableRecordError,
  UnknownSchemaError,
} from "reliable-consumers/kafka";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { toKafkaEnvelope } from "../../lib/kafka/kafkaEnvelope.ts";
import { readKafkaEvent } from "../../lib/kafka/mskEvent.ts";
import { WireFormatError } from "../../lib/kafka/schemas/errors.ts";
import { writeConfluentFrame } from "../../lib/kafka/schemas/wireFormat.ts";
import golden from "../fixtures/schemas/golden.json" with { type: "json" };

const golden_ = golden;

import { PaymentV1, PaymentV2, PaymentV3 } from "../fixtures/schemas/payment.ts";
import { type ConfluentStandIn, startConfluentStandIn } from "../support/confluentRegistryStandIn.ts";

// Decoding Confluent-framed Avro, Protobuf and JSON Schema records with the registry's REST API.
// The registry is a STAND-IN (test/support/confluentRegistryStandIn.ts, see docs/kafka.md); the
// Avro and JSON bytes come from Confluent's own serializers, talking to that registry over HTTP.

let registry: ConfluentStandIn;
let client: SchemaRegistryClient;
beforeAll(async () => {
  registry = await startConfluentStandIn({ auth: { username: "key", password: "secret" } });
  client = new SchemaRegistryClient({
    baseURLs: [registry.url],
    basicAuthCredentials: { credentialsSource: "USER_INFO", userInfo: "key:secret" },
  });
});
afterAll(() => registry.stop());

const auth = { username: "key", password: "secret" };

async function confluentAvro(subject: string, schema: object, values: object[]): Promise<Buffer[]> {
  const id = await client.register(subject, { schemaType: "AVRO", schema: JSON.stringify(schema) });
  const isKey = subject.endsWith("-key");
  const ser = new AvroSerializer(client, isKey ? SerdeType.KEY : SerdeType.VALUE, { useSchemaId: id });
  return Promise.all(values.map((v) => ser.serialize(subject.replace(/-(value|key)$/, ""), v)));
}

const event = (topic: string, values: (Buffer | null)[], key: Buffer | null = Buffer.from("k")) => ({
  eventSource: "aws:kafka",
  records: {
    [`${topic}-0`]: values.map((v, offset) => ({
      topic,
      partition: 0,
      offset,
      timestamp: 0,
      key: key?.toString("base64") ?? null,
      value: v?.toString("base64") ?? null,
      headers: [],
    })),
  },
});

describe("Avro with Confluent Schema Registry", () => {
  it("Confluent's serializer still writes the golden bytes, and they decode", async () => {
    const [bytes] = await confluentAvro("golden-value", golden.confluentAvro.schema, [
      golden.confluentAvro.value,
    ]);
    expect(bytes!.toString("hex")).toBe(golden.confluentAvro.hex);
    const decoder = avro({ registry: confluentRegistry({ url: registry.url, auth }) });
    const decoded = await decoder.decode(bytes!);
    expect(decoded).toEqual(golden.confluentAvro.value);
    // Plain data (issue 26 item 1): a strict schema accepts what Confluent's serializer wrote.
    expect(z.object({ id: z.string(), amount: z.number() }).strict().parse(decoded)).toEqual(decoded);
  });

  it("resolves older and newer writers into the reader's schema (Avro schema resolution)", async () => {
    const [v1] = await confluentAvro("evo-value", PaymentV1, [{ id: "p-1", amount: 5 }]);
    const [v3] = await confluentAvro("evo-value", PaymentV3, [
      { id: "p-3", amount: 7, currency: "USD", note: "hi" },
    ]);
    const decoder = avro<{ id: string; amount: number; currency: string }>({
      registry: confluentRegistry({ url: registry.url, auth }),
      schema: PaymentV2,
    });
    expect({ ...(await decoder.decode(v1!)) }).toEqual({ id: "p-1", amount: 5, currency: "EUR" }); // default filled
    expect({ ...(await decoder.decode(v3!)) }).toEqual({ id: "p-3", amount: 7, currency: "USD" }); // extra field dropped
    // A reader field with no default that the writer lacks cannot be resolved: permanent.
    const strict = avro({
      registry: confluentRegistry({ url: registry.url, auth }),
      schema: { ...PaymentV1, fields: [...PaymentV1.fields, { name: "must", type: "string" }] },
    });
    await expect(strict.decode(v1!)).rejects.toBeInstanceOf(UndecodableRecordError);
  });

  it("fetches each schema id once per container, even for concurrent records", async () => {
    const values = Array.from({ length: 40 }, (_, i) => ({ id: `c-${i}`, amount: i }));
    const bytes = await confluentAvro("cache-value", { ...PaymentV1, name: "CachePayment" }, values);
    const decoder = avro({ registry: confluentRegistry({ url: registry.url, auth }) });
    registry.delayMs = 50; // every fetch stays in flight while the others ask
    const before = registry.requests.length;
    try {
      const out = await Promise.all(bytes.map((b) => decoder.decode(b)));
      expect(out.map((o) => (o as { id: string }).id)).toEqual(values.map((v) => v.id));
    } finally {
      registry.delayMs = 0;
    }
    expect(registry.requests.slice(before).filter((r) => r.startsWith("GET /schemas/ids/"))).toHaveLength(1);
  });

  it("bad input: wrong magic byte, unknown id, undecodable bytes, a value failing the user's schema", async () => {
    const [good] = await confluentAvro("bad-value", { ...PaymentV1, name: "BadPayment" }, [
      { id: "b", amount: 1 },
    ]);
    const parse = avro({ registry: confluentRegistry({ url: registry.url, auth }) });
    const wrongMagic = Buffer.from(good!);
    wrongMagic[0] = 7;
    await expect(parse.decode(wrongMagic)).rejects.toBeInstanceOf(WireFormatError);
    await expect(
      parse.decode(writeConfluentFrame(9999, Buffer.from("06702d3154", "hex"))),
    ).rejects.toBeInstanceOf(UnknownSchemaError);
    await expect(parse.decode(good!.subarray(0, good!.length - 1))).rejects.toBeInstanceOf(
      UndecodableRecordError,
    );
    // Through the envelope: the decoded value then meets the user's Standard Schema.
    const [view] = readKafkaEvent(event("pay", [good!]));
    const schema = z.object({ id: z.string(), amount: z.number().min(100) });
    const error = await toKafkaEnvelope(view!, { parse, schema }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SchemaValidationError);
    expect((error as Error).message).toMatch(/amount/);
  });

  it("registry unreachable is transient (503, connection reset, nothing listening, bad credentials)", async () => {
    const [bytes] = await confluentAvro("down-value", { ...PaymentV1, name: "DownPayment" }, [
      { id: "d", amount: 1 },
    ]);
    const parse = avro({ registry: confluentRegistry({ url: registry.url, auth, timeoutMs: 2000 }) });
    for (const mode of ["unavailable", "reset"] as const) {
      registry.mode = mode;
      const error = await parse.decode(bytes!).catch((e: unknown) => e);
      registry.mode = "up";
      expect(error, mode).toBeInstanceOf(SchemaRegistryUnavailableError);
      expect((error as { kind: string }).kind).toBe("transient");
    }
    const wrongPassword = avro({
      registry: confluentRegistry({ url: registry.url, auth: { username: "key", password: "no" } }),
    });
    await expect(wrongPassword.decode(bytes!)).rejects.toBeInstanceOf(SchemaRegistryUnavailableError);
    const nowhere = avro({ registry: confluentRegistry({ url: "http://127.0.0.1:9", timeoutMs: 1000 }) });
    await expect(nowhere.decode(bytes!)).rejects.toBeInstanceOf(SchemaRegistryUnavailableError);
    // Once the registry answers again, the same decoder recovers (a failed fetch is not cached).
    expect({ ...((await parse.decode(bytes!)) as object) }).toEqual({ id: "d", amount: 1 });
  });

  it("a 404 that is not the registry's own 40403 is transient: a URL without its path prefix, a proxy's error page", async () => {
    // Issue 26 item 2: any 404 used to read as "unknown schema", so a SCHEMA_REGISTRY_URL missing
    // Apicurio's /apis/ccompat/v7 (or behind a proxy) dead-lettered every healthy framed record.
    const [bytes] = await confluentAvro("prefix-value", { ...PaymentV1, name: "PrefixPayment" }, [
      { id: "x", amount: 1 },
    ]);
    const proxy = createServer((_req, res) => {
      res.writeHead(404, { "content-type": "text/html" }).end("<html><body>Not Found</body></html>");
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      // The stand-in answers an unknown path with 404 and error_code 404, as Schema Registry does.
      for (const url of [`${registry.url}/apis/ccompat/v7`, proxyUrl]) {
        const wrong = confluentRegistry({ url, auth });
        const error = await avro({ registry: wrong })
          .decode(bytes!)
          .catch((e: unknown) => e);
        expect(error, url).toBeInstanceOf(SchemaRegistryUnavailableError);
        const lookup = await wrong
          .idFor({ subject: "prefix-value", format: "AVRO", definition: "{}" }, { register: false })
          .catch((e: unknown) => e);
        expect(lookup, url).toBeInstanceOf(SchemaRegistryUnavailableError);
        const registering = await wrong
          .idFor({ subject: "prefix-value", format: "AVRO", definition: "{}" }, { register: true })
          .catch((e: unknown) => e);
        expect(registering, url).toBeInstanceOf(SchemaRegistryUnavailableError);
      }
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
    // The registry's own answers stay permanent: 40403 for an id, 40401 / 40403 for a lookup.
    const right = confluentRegistry({ url: registry.url, auth });
    await expect(
      avro({ registry: right }).decode(writeConfluentFrame(98765, bytes!.subarray(5))),
    ).rejects.toBeInstanceOf(UnknownSchemaError);
    await expect(
      right.idFor({ subject: "no-such-subject", format: "AVRO", definition: "{}" }, { register: false }),
    ).rejects.toBeInstanceOf(UnknownSchemaError);
    await expect(
      right.idFor({ subject: "prefix-value", format: "AVRO", definition: '"string"' }, { register: false }),
    ).rejects.toBeInstanceOf(UnknownSchemaError);
  });

  it("reads credentials from the environment or from a secret ({username, password})", async () => {
    const [bytes] = await confluentAvro("auth-value", { ...PaymentV1, name: "AuthPayment" }, [
      { id: "a", amount: 2 },
    ]);
    const fromEnv = confluentRegistry({
      env: {
        SCHEMA_REGISTRY_URL: registry.url,
        SCHEMA_REGISTRY_API_KEY: "key",
        SCHEMA_REGISTRY_API_SECRET: "secret",
      },
    });
    expect(await avro({ registry: fromEnv }).decode(bytes!)).toMatchObject({ id: "a" });
    const read: string[] = [];
    const fromSecret = confluentRegistry({
      url: registry.url,
      auth: {
        secretArn: "arn:aws:secretsmanager:eu-west-1:111122223333:secret:sr",
        readSecret: async (arn) => {
          read.push(arn);
          return JSON.stringify({ username: "key", password: "secret" });
        },
      },
    });
    const d = avro({ registry: fromSecret });
    await Promise.all([d.decode(bytes!), d.decode(bytes!)]);
    expect(read).toHaveLength(1);
  });
});

describe("JSON Schema with Confluent Schema Registry", () => {
  it("decodes Confluent's JsonSerializer bytes and validates them with the writer's schema", async () => {
    const schema = golden.confluentJson.schema;
    const id = await client.register("json-value", { schemaType: "JSON", schema: JSON.stringify(schema) });
    const ser = new JsonSerializer(client, SerdeType.VALUE, { useSchemaId: id });
    const bytes = await ser.serialize("json", { id: "e-1" });
    const parse = jsonSchema({ registry: confluentRegistry({ url: registry.url, auth }) });
    expect(await parse.decode(bytes)).toEqual({ id: "e-1" });
    // Not valid against the writer's schema (Confluent's serializer would refuse it; a foreign producer did not).
    const invalid = writeConfluentFrame(id, Buffer.from('{"id":5}'));
    await expect(parse.decode(invalid)).rejects.toBeInstanceOf(SchemaValidationError);
    await expect(parse.decode(writeConfluentFrame(id, Buffer.from("{nope")))).rejects.toBeInstanceOf(
      UndecodableRecordError,
    );
  });
});

const PROTO_V1 = `syntax = "proto3";
package shop;
message Header { string trace = 1; }
message Order { string id = 1; int64 cents = 2; message Line { string sku = 1; } }`;
const PROTO_V2 = `syntax = "proto3";
package shop;
message Header { string trace = 1; }
message Order { string id = 1; int64 cents = 2; string channel = 3; message Line { string sku = 1; } }`;

describe("Protobuf with Confluent Schema Registry", () => {
  it("finds the message by its indexes in the writer's .proto, and evolves by field numbers", async () => {
    const id1 = await client.register("orders-value", { schemaType: "PROTOBUF", schema: PROTO_V1 });
    const id2 = await client.register("orders-value", { schemaType: "PROTOBUF", schema: PROTO_V2 });
    const v2 = protobufjs.parse(PROTO_V2).root.lookupType("shop.Order");
    const v1 = protobufjs.parse(PROTO_V1).root.lookupType("shop.Order");
    const line = protobufjs.parse(PROTO_V1).root.lookupType("shop.Order.Line");
    const written = writeConfluentFrame(
      id2,
      v2.encode(v2.fromObject({ id: "o-1", cents: 250, channel: "web" })).finish(),
      [1],
    );
    const registryOnly = protobuf({ registry: confluentRegistry({ url: registry.url, auth }) });
    expect(await registryOnly.decode(written)).toEqual({ id: "o-1", cents: "250", channel: "web" });
    // Today's code still knows v1: the newer writer's field 3 is skipped, the rest decodes.
    const reader = protobuf({ registry: confluentRegistry({ url: registry.url, auth }), type: v1 });
    expect(await reader.decode(written)).toEqual({ id: "o-1", cents: "250" });
    // A nested message: indexes [1, 0] = Order.Line.
    const nested = writeConfluentFrame(id1, line.encode({ sku: "s-9" }).finish(), [1, 0]);
    expect(await registryOnly.decode(nested)).toEqual({ sku: "s-9" });
    // Bad input: a truncated varint, an index that names no message, bytes that are not the message.
    await expect(
      registryOnly.decode(Buffer.concat([writeConfluentFrame(id1, Buffer.alloc(0)), Buffer.from([0x80])])),
    ).rejects.toBeInstanceOf(WireFormatError);
    await expect(
      registryOnly.decode(writeConfluentFrame(id1, Buffer.from("0a03", "hex"), [7])),
    ).rejects.toBeInstanceOf(UndecodableRecordError);
    await expect(
      registryOnly.decode(writeConfluentFrame(id1, Buffer.from("0a05ab", "hex"), [1])),
    ).rejects.toBeInstanceOf(UndecodableRecordError);
  });
});

describe("Protobuf bytes from Confluent's own ProtobufSerializer", () => {
  it("frames message indexes as the golden bytes say, and the registry's printed .proto decodes them", async () => {
    // Confluent's serializer wants @bufbuild/protobuf descriptors: built here from the .proto text
    // by protobufjs's descriptor extension, so the message definitions are the same as above.
    const root = protobufjs.parse(PROTO_V1, { keepCase: true }).root as protobufjs.Root & {
      toDescriptor(syntax: string): { constructor: { encode(m: unknown): { finish(): Uint8Array } } };
    };
    const set = root.toDescriptor("proto3");
    const files = createFileRegistry(
      fromBinary(FileDescriptorSetSchema, set.constructor.encode(set).finish()),
    );
    const ser = new ProtobufSerializer(client, SerdeType.VALUE, { autoRegisterSchemas: true });
    ser.registry = files as unknown as ProtobufSerializer["registry"];
    const order = await ser.serialize(
      "vendor-pb",
      create(files.getMessage("shop.Order")!, { id: "o-1", cents: 250n }),
    );
    const line = await ser.serialize(
      "vendor-pb",
      create(files.getMessage("shop.Order.Line")!, { sku: "s-9" }),
    );
    const id = order.readInt32BE(1);
    const head = (indexes: string) => `00${id.toString(16).padStart(8, "0")}${indexes}`;
    const golden = (ix: number[]) =>
      golden_.confluentProtobufIndexes.find((g) => g.indexes.join() === ix.join())!.hex.slice(10);
    expect(order.toString("hex")).toBe(`${head(golden([1]))}0a036f2d3110fa01`);
    expect(line.toString("hex")).toBe(`${head(golden([1, 0]))}0a03732d39`);
    const decoder = protobuf({ registry: confluentRegistry({ url: registry.url, auth }) });
    expect(await decoder.decode(order)).toEqual({ id: "o-1", cents: "250" });
    expect(await decoder.decode(line)).toEqual({ sku: "s-9" });
  });
});

describe("the MSK trigger's own schema-registry modes, one handler for all", () => {
  it("reads a value Lambda hands over as JSON, as SOURCE bytes, or framed from the registry", async () => {
    const [framed] = await confluentAvro("modes-value", { ...PaymentV1, name: "ModePayment" }, [
      { id: "m", amount: 3 },
    ]);
    const parse = avro({
      registry: confluentRegistry({ url: registry.url, auth }),
      schema: { ...PaymentV1, name: "ModePayment" },
    });
    const schema = z.object({ id: z.string(), amount: z.number() });
    const viewOf = (b: Buffer) => readKafkaEvent(event("modes", [b]))[0]!;
    const asFramed = await toKafkaEnvelope(viewOf(framed!), { parse, schema, lambdaSchemaRegistry: false });
    const asJson = await toKafkaEnvelope(viewOf(Buffer.from('{"id":"m","amount":3}')), {
      parse,
      schema,
      lambdaSchemaRegistry: { eventRecordFormat: "JSON", attributes: ["VALUE"] },
    });
    const asSource = await toKafkaEnvelope(viewOf(framed!.subarray(5)), {
      parse,
      schema,
      lambdaSchemaRegistry: { eventRecordFormat: "SOURCE", attributes: ["VALUE"] },
    });
    for (const e of [asFramed, asJson, asSource]) expect(e.body).toEqual({ id: "m", amount: 3 });
  });

  it("SOURCE with the schema id Lambda reports: the writer schema comes from the registry, so evolution still works", async () => {
    const [v1] = await confluentAvro("source-evo-value", { ...PaymentV1, name: "SourcePayment" }, [
      { id: "s", amount: 4 },
    ]);
    const id = String(v1!.readInt32BE(1));
    const parse = avro({
      registry: confluentRegistry({ url: registry.url, auth }),
      schema: { ...PaymentV2, name: "SourcePayment" },
    });
    const [view] = readKafkaEvent({
      eventSource: "aws:kafka",
      records: {
        "evo-0": [
          {
            topic: "evo",
            partition: 0,
            offset: 0,
            timestamp: 0,
            value: v1!.subarray(5).toString("base64"), // what SOURCE hands over
            valueSchemaMetadata: { dataFormat: "AVRO", schemaId: id },
          },
        ],
      },
    });
    const env = await toKafkaEnvelope(view!, {
      parse,
      lambdaSchemaRegistry: { eventRecordFormat: "SOURCE", attributes: ["VALUE"] },
    });
    expect({ ...(env.body as object) }).toEqual({ id: "s", amount: 4, currency: "EUR" });
    // Protobuf under SOURCE keeps Confluent's message indexes (a numeric id), as Powertools reads them.
    const pid = await client.register("source-pb-value", { schemaType: "PROTOBUF", schema: PROTO_V1 });
    const order = protobufjs.parse(PROTO_V1).root.lookupType("shop.Order");
    const framed = writeConfluentFrame(
      pid,
      order.encode(order.fromObject({ id: "o-2", cents: 9 })).finish(),
      [1],
    );
    const pb = protobuf({ registry: confluentRegistry({ url: registry.url, auth }) });
    expect(await pb.decode(framed.subarray(5), { framing: "none", schemaId: String(pid) })).toEqual({
      id: "o-2",
      cents: "9",
    });
  });

  it("decodes the key separately, and passes tombstones through undecoded", async () => {
    const keySchema = { type: "record", name: "OrderKey", fields: [{ name: "orderId", type: "string" }] };
    const [key] = await confluentAvro("keys-key", keySchema, [{ orderId: "o-7" }]);
    const [value] = await confluentAvro("keys-value", { ...PaymentV1, name: "KeyedPayment" }, [
      { id: "x", amount: 1 },
    ]);
    const registryClient = confluentRegistry({ url: registry.url, auth });
    const [view, tomb] = readKafkaEvent(event("keys", [value!, null], key!));
    const options = {
      parse: avro({ registry: registryClient }),
      parseKey: avro({ registry: registryClient }),
      keySchema: z.object({ orderId: z.string() }),
      lambdaSchemaRegistry: false as const,
    };
    const env = await toKafkaEnvelope(view!, options);
    expect(env.parsedKey).toEqual({ orderId: "o-7" });
    expect(env.body).toMatchObject({ id: "x" });
    const t = await toKafkaEnvelope(tomb!, options);
    expect(t).toMatchObject({ tombstone: true, body: null, parsedKey: { orderId: "o-7" } });
  });
});
