/**
 * Glue Schema Registry and Secrets Manager requests as IAM sees them (the stand-ins for the schema
 * registries of the Kafka consumers). Glue's GetSchemaVersion by `SchemaVersionId` names no
 * registry or schema, so AWS can only authorize it on `*` (awslabs/aws-glue-schema-registry#68).
 */
import type { AuthzRequest } from "../iam/iamEvaluator.ts";

type Body = Record<string, unknown>;

interface SchemaId {
  readonly SchemaArn?: string;
  readonly RegistryName?: string;
  readonly SchemaName?: string;
}

const DEFAULT_REGISTRY = "default-registry";

export function glueAuthz(operation: string, body: Body, region: string, account: string): AuthzRequest[] {
  const action = `glue:${operation}`;
  const registryArn = (name: string) => `arn:aws:glue:${region}:${account}:registry/${name}`;
  const schemaArn = (registry: string, schema: string) =>
    `arn:aws:glue:${region}:${account}:schema/${registry}/${schema}`;
  const schemaOf = (id: SchemaId | undefined): string[] => {
    if (!id) return [];
    if (id.SchemaArn) {
      const registry = /:schema\/([^/]+)\//.exec(id.SchemaArn)?.[1];
      return [id.SchemaArn, ...(registry ? [registryArn(registry)] : [])];
    }
    const registry = id.RegistryName ?? DEFAULT_REGISTRY;
    return id.SchemaName
      ? [schemaArn(registry, id.SchemaName), registryArn(registry)]
      : [registryArn(registry)];
  };
  let resources: string[];
  if (operation === "GetSchemaVersion" && typeof body.SchemaVersionId === "string") resources = ["*"];
  else if (body.SchemaId) resources = schemaOf(body.SchemaId as SchemaId);
  else if (body.RegistryId) {
    const r = body.RegistryId as { RegistryName?: string; RegistryArn?: string };
    const registry = r.RegistryArn ?? registryArn(r.RegistryName ?? DEFAULT_REGISTRY);
    const name = /registry\/(.+)$/.exec(registry)?.[1] ?? DEFAULT_REGISTRY;
    resources =
      typeof body.SchemaName === "string" ? [schemaArn(name, body.SchemaName), registry] : [registry];
  } else resources = ["*"];
  return resources.map((resource) => ({ action, resource }));
}

export function secretsAuthz(operation: string, body: Body, region: string, account: string): AuthzRequest[] {
  const id = typeof body.SecretId === "string" ? body.SecretId : undefined;
  const resource = !id
    ? "*"
    : id.startsWith("arn:")
      ? id
      : `arn:aws:secretsmanager:${region}:${account}:secret:${id}`;
  return [{ action: `secretsmanager:${operation}`, resource }];
}
