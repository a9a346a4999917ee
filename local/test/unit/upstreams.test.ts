import { describe, expect, it } from "vitest";
import { describeUpstreams, resolveUpstreams, UpstreamError, upstreamIdentity } from "../../src/upstreams.ts";

const LS = "http://localhost:4566";

describe("where `reliable-consumers local` takes each service from (upstreams.ts)", () => {
  it("nothing given: every service is ours", () => {
    expect(resolveUpstreams({}, {})).toEqual({});
    expect(describeUpstreams({})).toEqual([
      "SQS: fauxqs (embedded)",
      "DynamoDB and Streams: DynamoDB Local (embedded)",
      "Kafka: embedded",
    ]);
  });

  it("--endpoint-url: every AWS service there, over any variable (as the AWS CLI); Kafka stays ours", () => {
    const u = resolveUpstreams(
      { endpointUrl: `${LS}/` },
      { AWS_ENDPOINT_URL_SQS: "http://elsewhere:1", AWS_ENDPOINT_URL: "http://other:2" },
    );
    const at = { url: LS, from: "--endpoint-url" };
    expect(u).toEqual({ sqs: at, dynamodb: at, dynamodbStreams: at });
  });

  it("per service: AWS_ENDPOINT_URL_<SERVICE> over AWS_ENDPOINT_URL, each absent service embedded", () => {
    expect(resolveUpstreams({}, { AWS_ENDPOINT_URL_SQS: LS })).toEqual({
      sqs: { url: LS, from: "AWS_ENDPOINT_URL_SQS" },
    });
    const both = resolveUpstreams({}, { AWS_ENDPOINT_URL: LS, AWS_ENDPOINT_URL_DYNAMODB: "http://ddb:8000" });
    expect(both.sqs).toEqual({ url: LS, from: "AWS_ENDPOINT_URL" });
    expect(both.dynamodb).toEqual({ url: "http://ddb:8000", from: "AWS_ENDPOINT_URL_DYNAMODB" });
    expect(describeUpstreams({ sqs: both.sqs! })[0]).toBe(`SQS at ${LS} (AWS_ENDPOINT_URL)`);
  });

  it("DynamoDB Streams follow DynamoDB unless given; given alone, they are refused", () => {
    const follows = resolveUpstreams({}, { AWS_ENDPOINT_URL_DYNAMODB: LS });
    expect(follows.dynamodbStreams).toEqual({ url: LS, from: "AWS_ENDPOINT_URL_DYNAMODB" });
    const own = resolveUpstreams(
      {},
      { AWS_ENDPOINT_URL_DYNAMODB: LS, AWS_ENDPOINT_URL_DYNAMODB_STREAMS: "http://streams:1" },
    );
    expect(own.dynamodbStreams).toEqual({
      url: "http://streams:1",
      from: "AWS_ENDPOINT_URL_DYNAMODB_STREAMS",
    });
    expect(() => resolveUpstreams({}, { AWS_ENDPOINT_URL_DYNAMODB_STREAMS: LS })).toThrow(
      /a table's stream comes from the emulator that holds the table/,
    );
  });

  it("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true ignores the variables, not --endpoint-url", () => {
    const env = { AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: "true", AWS_ENDPOINT_URL: LS };
    expect(resolveUpstreams({}, env)).toEqual({});
    expect(resolveUpstreams({ endpointUrl: LS }, env).sqs?.from).toBe("--endpoint-url");
  });

  it("--kafka-brokers: a Kafka the user runs; bad input is a typed error naming the flag", () => {
    expect(resolveUpstreams({ kafkaBrokers: "b1:9092, b2:9092" }, {}).kafkaBrokers).toEqual({
      brokers: ["b1:9092", "b2:9092"],
      from: "--kafka-brokers",
    });
    expect(() => resolveUpstreams({ kafkaBrokers: "" }, {})).toThrow(UpstreamError);
    expect(() => resolveUpstreams({ kafkaBrokers: "http://b1:9092" }, {})).toThrow(/not host:port/);
    expect(() => resolveUpstreams({ endpointUrl: "localhost:4566" }, {})).toThrow(/--endpoint-url/);
    expect(() => resolveUpstreams({}, { AWS_ENDPOINT_URL_SQS: "not a url" })).toThrow(
      /AWS_ENDPOINT_URL_SQS: 'not a url' is not a URL/,
    );
  });

  it("the user's region and credentials for their services; ours where they set none", () => {
    expect(upstreamIdentity({})).toEqual({
      AWS_REGION: "us-east-1",
      AWS_DEFAULT_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "local",
      AWS_SECRET_ACCESS_KEY: "local",
    });
    expect(
      upstreamIdentity({
        AWS_DEFAULT_REGION: "eu-west-1",
        AWS_ACCESS_KEY_ID: "test",
        AWS_SECRET_ACCESS_KEY: "test",
        AWS_SESSION_TOKEN: "token",
      }),
    ).toEqual({
      AWS_REGION: "eu-west-1",
      AWS_DEFAULT_REGION: "eu-west-1",
      AWS_ACCESS_KEY_ID: "test",
      AWS_SECRET_ACCESS_KEY: "test",
      AWS_SESSION_TOKEN: "token",
    });
    // A key without its secret is not a credential: ours.
    expect(upstreamIdentity({ AWS_ACCESS_KEY_ID: "AKIA" }).AWS_ACCESS_KEY_ID).toBe("local");
  });
});
