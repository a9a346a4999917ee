/**
 * Errors the gateway answers itself, in each service's own JSON-protocol shape, so the SDK raises
 * the exception class (and `name`) it would raise on AWS.
 */
export type GatewayService = "sqs" | "dynamodb" | "streams" | "kinesis" | "glue" | "secretsmanager";

export interface ServiceError {
  readonly status: number;
  /** The JSON protocol's error code: `AccessDeniedException`, `InvalidParameterValue`... */
  readonly code: string;
  readonly message: string;
  /** SQS only: the query-protocol code the SDK reports as the error's name (`AccessDenied`). */
  readonly queryCode?: string;
}

const TYPE_PREFIX: Record<GatewayService, string> = {
  sqs: "com.amazonaws.sqs#",
  dynamodb: "com.amazonaws.dynamodb.v20120810#",
  streams: "com.amazonaws.dynamodb.v20120810#",
  kinesis: "",
  glue: "",
  secretsmanager: "",
};

/** AccessDenied as each service answers it: SQS with HTTP 403 and `AccessDenied`, the JSON services with 400. */
export function accessDenied(service: GatewayService, message: string): ServiceError {
  return service === "sqs"
    ? { status: 403, code: "AccessDeniedException", queryCode: "AccessDenied", message }
    : { status: 400, code: "AccessDeniedException", message };
}

/** A validation error the way SQS words its invalid parameters. */
export const sqsInvalidParameter = (message: string): ServiceError => ({
  status: 400,
  code: "InvalidParameterValue",
  queryCode: "InvalidParameterValue",
  message,
});

/** The HTTP response for an error of `service`. */
export function renderServiceError(
  service: GatewayService,
  error: ServiceError,
): { status: number; headers: Record<string, string>; body: string } {
  const headers: Record<string, string> = {
    "content-type": service === "sqs" ? "application/x-amz-json-1.0" : "application/x-amz-json-1.1",
    "x-amzn-requestid": crypto.randomUUID(),
  };
  // The SQS JSON protocol keeps the query protocol's codes in this header; the SDK names the error after it.
  if (error.queryCode) headers["x-amzn-query-error"] = `${error.queryCode};Sender`;
  const type = `${TYPE_PREFIX[service]}${error.code}`;
  const body = JSON.stringify(
    service === "sqs" ? { __type: type, message: error.message } : { __type: type, Message: error.message },
  );
  return { status: error.status, headers, body };
}
