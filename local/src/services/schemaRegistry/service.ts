/**
 * The schema registries' AWS calls (Glue Schema Registry, and the Secrets Manager secret a
 * Confluent registry's credentials live in): forwarded to the endpoint the user gives, IAM checked.
 */
import type { LocalService } from "../localService.ts";
import { glueAuthz, secretsAuthz } from "./enforcement.ts";

export const schemaRegistryService: LocalService = {
  name: "schemaRegistry",
  gateway: [
    {
      service: "glue",
      targetPrefix: "AWSGlue.",
      authz: (operation, body, ctx) => glueAuthz(operation, body, ctx.region, ctx.accountId),
    },
    {
      service: "secretsmanager",
      targetPrefix: "secretsmanager.",
      authz: (operation, body, ctx) => secretsAuthz(operation, body, ctx.region, ctx.accountId),
    },
  ],
};
