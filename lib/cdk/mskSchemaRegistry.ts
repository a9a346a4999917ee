import type { Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { ConfluentSchemaRegistry, GlueSchemaRegistry } from "aws-cdk-lib/aws-lambda-event-sources";
import type * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import { CONFLUENT_REGISTRY_ENV, GLUE_REGISTRY_ENV, SCHEMA_REGISTRY_ENV } from "../kafka/schemas/env.ts";
import { ConsumerRuleError } from "./rules/ruleError.ts";

/**
 * The MSK trigger's own schema-registry integration (the event source mapping's
 * `SchemaRegistryConfig`, provisioned mode only): Lambda fetches the writer schemas, validates the
 * chosen attributes and hands the function JSON (`eventRecordFormat: "JSON"`) or the source bytes
 * without their framing (`"SOURCE"`). The consumer learns the mode from the environment
 * (KAFKA_SCHEMA_REGISTRY_EVENT_RECORD_FORMAT / _ATTRIBUTES), so a handler works in every mode.
 */
export type MskSchemaRegistry =
  | (MskSchemaRegistryCommon & {
      readonly kind: "glue";
      /** `arn:aws:glue:<region>:<account>:registry/<name>` (a literal: the grants need the name). */
      readonly registryArn: string;
    })
  | (MskSchemaRegistryCommon & {
      readonly kind: "confluent";
      /** The registry's URL (https). */
      readonly url: string;
      /**
       * Credentials: a secret with `{"username","password"}` (BASIC_AUTH: Confluent Cloud's API key
       * and secret), or a client certificate (CLIENT_CERTIFICATE_TLS_AUTH). Granted to the function
       * for reading, and handed to the function's own registry client as SCHEMA_REGISTRY_SECRET_ARN.
       * @default none (a registry without auth)
       */
      readonly secret?: secretsmanager.ISecret;
      /** How the mapping authenticates to the registry with `secret`. @default "BASIC_AUTH" */
      readonly authentication?: "BASIC_AUTH" | "CLIENT_CERTIFICATE_TLS_AUTH";
    });

interface MskSchemaRegistryCommon {
  /**
   * The record format Lambda hands the function: `JSON` (deserialized) or `SOURCE` (the record's bytes, the
   * registry framing removed).
   * @default "JSON" (the function gets JSON; no schema needs bundling)
   */
  readonly eventRecordFormat?: "JSON" | "SOURCE";
  /** The attributes Lambda validates (and, with JSON, deserializes). @default ["VALUE"] */
  readonly validate?: ReadonlyArray<"KEY" | "VALUE">;
}

export const MSK_SCHEMA_REGISTRY_DEFAULTS = {
  eventRecordFormat: "JSON",
  validate: ["VALUE"],
  authentication: "BASIC_AUTH",
} as const;

const GLUE_ARN = /^arn:[^:]+:glue:[^:]+:[^:]+:registry\/([^/]+)$/;

/** The registry's name from its ARN, which must be a literal: the grants and the environment need it. */
function glueRegistryName(registryArn: string, path: string): string {
  const name = GLUE_ARN.exec(registryArn)?.[1];
  if (!name) {
    throw new ConsumerRuleError(
      "SchemaRegistryInvalid",
      `schemaRegistry.registryArn '${registryArn}' is not a Glue registry ARN (arn:aws:glue:<region>:<account>:registry/<name>)`,
      path,
    );
  }
  return name;
}

/** TLS only, unless the app's context allows a plaintext registry (local tests). */
function assertTlsRegistry(scope: Stack, url: string, path: string): void {
  if (!/^https:\/\//.test(url) && !scope.node.tryGetContext("allowPlaintextSchemaRegistry")) {
    throw new ConsumerRuleError("SchemaRegistryNotTls", "schemaRegistry.url must be https (TLS only)", path);
  }
}

/** The CDK schema-registry config of the trigger's main mapping (its retry topics' have none), and the function's environment. */
export function mskSchemaRegistryConfig(
  scope: Stack,
  path: string,
  registry: MskSchemaRegistry,
): { readonly config: lambda.ISchemaRegistry; readonly env: Readonly<Record<string, string>> } {
  const format = registry.eventRecordFormat ?? MSK_SCHEMA_REGISTRY_DEFAULTS.eventRecordFormat;
  const attributes = registry.validate ?? MSK_SCHEMA_REGISTRY_DEFAULTS.validate;
  if (attributes.length === 0) {
    throw new ConsumerRuleError(
      "SchemaRegistryInvalid",
      "schemaRegistry.validate needs KEY, VALUE or both",
      path,
    );
  }
  const common = {
    eventRecordFormat: lambda.EventRecordFormat.of(format),
    schemaValidationConfigs: attributes.map((a) => ({
      attribute: lambda.KafkaSchemaValidationAttribute.of(a),
    })),
  };
  const env: Record<string, string> = {
    [SCHEMA_REGISTRY_ENV.eventRecordFormat]: format,
    [SCHEMA_REGISTRY_ENV.attributes]: attributes.join(","),
  };
  if (registry.kind === "glue") {
    env[GLUE_REGISTRY_ENV.registryName] = glueRegistryName(registry.registryArn, path);
    // Grants glue:GetRegistry on the registry and glue:GetSchemaVersion on it and its schemas.
    return { config: new GlueSchemaRegistry({ ...common, schemaRegistryArn: registry.registryArn }), env };
  }
  assertTlsRegistry(scope, registry.url, path);
  env[CONFLUENT_REGISTRY_ENV.url] = registry.url;
  if (!registry.secret) {
    return {
      config: {
        bind: () => ({ schemaRegistryUri: registry.url, ...common }),
      },
      env,
    };
  }
  env[CONFLUENT_REGISTRY_ENV.secretArn] = registry.secret.secretArn;
  return {
    // Grants secretsmanager:GetSecretValue (and kms:Decrypt for a customer-managed key).
    config: new ConfluentSchemaRegistry({
      ...common,
      schemaRegistryUri: registry.url,
      authenticationType: lambda.KafkaSchemaRegistryAccessConfigType.of(
        registry.authentication ?? MSK_SCHEMA_REGISTRY_DEFAULTS.authentication,
      ),
      secret: registry.secret,
    }),
    env,
  };
}

/**
 * A schema registry the function's own code talks to (`glueRegistry()` / `confluentRegistry()`):
 * the outbox relay framing what it produces, or a consumer decoding framed bytes itself. Unlike
 * `addMskTrigger({ schemaRegistry })` this does not involve the event source mapping.
 */
export type SchemaRegistryAccess =
  | {
      readonly kind: "glue";
      /** `arn:aws:glue:<region>:<account>:registry/<name>` (a literal: the grants need the name). */
      readonly registryArn: string;
      /**
       * The function may register schemas (`register: true` in the producer's framing):
       * `glue:RegisterSchemaVersion` and `glue:CreateSchema` besides the lookups.
       * @default false
       */
      readonly register?: boolean;
    }
  | {
      readonly kind: "confluent";
      /** The registry's URL (https). */
      readonly url: string;
      /** A secret with `{"username","password"}`, granted for reading. @default none (no auth) */
      readonly secret?: secretsmanager.ISecret;
    };

/** The Glue actions of a function that reads schemas (decoding by id, producing by definition). */
export const GLUE_READ_ACTIONS = ["glue:GetRegistry", "glue:GetSchemaVersion", "glue:GetSchemaByDefinition"];

/**
 * A Glue-framed record names its schema by version id only, and GetSchemaVersion by
 * `SchemaVersionId` names no registry or schema: in the service authorization reference both of its
 * resource types are optional, so IAM can only match such a call against `Resource: "*"`
 * (awslabs/aws-glue-schema-registry#68). Without this every decode is AccessDenied: the registry
 * reads as unavailable, and Glue-framed records circle the first retry topic. Read-only, on schema
 * definitions; the other actions stay scoped to the registry.
 */
export const GLUE_BY_ID_REASON =
  "glue:GetSchemaVersion by SchemaVersionId names no registry or schema, so IAM matches it only against Resource *.";

export function grantGetSchemaVersionById(grantee: iam.IGrantable): void {
  iam.Grant.addToPrincipal({ grantee, actions: ["glue:GetSchemaVersion"], resourceArns: ["*"] });
}
/** The Glue actions a function that registers schemas needs as well. */
export const GLUE_REGISTER_ACTIONS = ["glue:RegisterSchemaVersion", "glue:CreateSchema"];

/** Grants a function what `access` needs and returns the environment its registry client reads. */
export function grantSchemaRegistryAccess(
  scope: Stack,
  path: string,
  grantee: iam.IGrantable,
  access: SchemaRegistryAccess,
): Readonly<Record<string, string>> {
  if (access.kind === "glue") {
    const name = glueRegistryName(access.registryArn, path);
    const schemas = access.registryArn.replace(/:registry\/[^/]+$/, `:schema/${name}/*`);
    iam.Grant.addToPrincipal({
      grantee,
      actions: [...GLUE_READ_ACTIONS, ...(access.register ? GLUE_REGISTER_ACTIONS : [])],
      resourceArns: [access.registryArn, schemas],
    });
    grantGetSchemaVersionById(grantee);
    return { [GLUE_REGISTRY_ENV.registryName]: name };
  }
  assertTlsRegistry(scope, access.url, path);
  if (!access.secret) return { [CONFLUENT_REGISTRY_ENV.url]: access.url };
  access.secret.grantRead(grantee);
  return {
    [CONFLUENT_REGISTRY_ENV.url]: access.url,
    [CONFLUENT_REGISTRY_ENV.secretArn]: access.secret.secretArn,
  };
}
