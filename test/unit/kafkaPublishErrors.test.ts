import { KafkaJSConnectionError, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError } from "kafkajs";
import { classifyError } from "reliable-consumers";
import {
  KafkaPublishPermanentError,
  KafkaPublishTransientError,
  kafkaConfigFromEnv,
  toKafkaJsConfig,
} from "reliable-consumers/kafka";
import { describe, expect, it } from "vitest";
import { classifyPublishError } from "../../lib/kafka/publishErrors.ts";

// kafkajs builds protocol errors from the broker's error code; these are the shapes it throws.
const protocol = (type: string, retriable: boolean) =>
  Object.assign(new KafkaJSProtocolError(`broker says ${type}`), { type, retriable });

describe("Kafka publish error classification", () => {
  it("is permanent only when the record itself can never be accepted", () => {
    for (const type of [
      "MESSAGE_TOO_LARGE",
      "RECORD_LIST_TOO_LARGE",
      "INVALID_RECORD",
      "INVALID_TOPIC_EXCEPTION",
    ]) {
      const e = classifyPublishError(protocol(type, false), "t");
      expect(e, type).toBeInstanceOf(KafkaPublishPermanentError);
      expect(classifyError(e)).toBe("permanent");
      expect(e.kafkaType).toBe(type);
    }
  });

  it("is transient for connection loss, leadership changes, timeouts and auth problems", () => {
    const cases = [
      new KafkaJSConnectionError("ECONNREFUSED"),
      protocol("NOT_LEADER_FOR_PARTITION", true),
      protocol("REQUEST_TIMED_OUT", true),
      protocol("TOPIC_AUTHORIZATION_FAILED", false),
      new Error("socket hang up"),
    ];
    for (const c of cases) {
      const e = classifyPublishError(c, "t");
      expect(e, String(c)).toBeInstanceOf(KafkaPublishTransientError);
      expect(classifyError(e)).toBe("transient");
    }
  });

  it("looks through kafkajs' retries-exceeded wrapper to the root cause", () => {
    const wrapped = new KafkaJSNumberOfRetriesExceeded(protocol("MESSAGE_TOO_LARGE", false), {
      retryCount: 5,
      retryTime: 100,
    });
    expect(classifyPublishError(wrapped, "t")).toBeInstanceOf(KafkaPublishPermanentError);
    const transient = new KafkaJSNumberOfRetriesExceeded(new KafkaJSConnectionError("gone"), {
      retryCount: 5,
      retryTime: 100,
    });
    expect(classifyPublishError(transient, "orders")).toBeInstanceOf(KafkaPublishTransientError);
    expect(classifyPublishError(transient, "orders").message).toContain("orders");
  });
});

describe("Kafka connection config", () => {
  it("reads the environment: plaintext locally, IAM over TLS on MSK", () => {
    const local = toKafkaJsConfig(kafkaConfigFromEnv({ KAFKA_BROKERS: "127.0.0.1:1, 127.0.0.1:2" }));
    expect(local).toMatchObject({ brokers: ["127.0.0.1:1", "127.0.0.1:2"], ssl: false });
    expect(local.sasl).toBeUndefined();
    const msk = toKafkaJsConfig(
      kafkaConfigFromEnv({ KAFKA_BROKERS: "b-1.msk:9098", MSK_IAM_AUTH: "true", AWS_REGION: "eu-west-1" }),
    );
    expect(msk).toMatchObject({ ssl: true, sasl: { mechanism: "oauthbearer" } });
    expect(typeof (msk.sasl as { oauthBearerProvider: unknown }).oauthBearerProvider).toBe("function");
    expect(() => kafkaConfigFromEnv({})).toThrow(/KAFKA_BROKERS/);
  });
});
