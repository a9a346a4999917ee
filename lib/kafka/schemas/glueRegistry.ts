import { setTimeout as sleep } from "node:timers/promises";
import {
  CreateSchemaCommand,
  GetRegistryCommand,
  GetSchemaByDefinitionCommand,
  GetSchemaVersionCommand,
  GlueClient,
  RegisterSchemaVersionCommand,
} from "@aws-sdk/client-glue";
import { GLUE_REGISTRY_ENV } from "./env.ts";
import { SchemaRegistryUnavailableError, UnknownSchemaError } from "./errors.ts";
import type { RegistrySchema, SchemaFormat, SchemaRegistry, SchemaSubject } from "./registry.ts";
import { createPromiseCache } from "./schemaCache.ts";

/**
 * AWS Glue Schema Registry through the Glue API, with the function's IAM role:
 *
 * - consuming: `GetSchemaVersion(SchemaVersionId)` for the UUID in a record's Glue framing
 *   (IAM `glue:GetSchemaVersion`);
 * - producing: `GetSchemaByDefinition` to look a schema up (`glue:GetSchemaByDefinition`), or,
 *   when registering is allowed, `RegisterSchemaVersion` (`glue:RegisterSchemaVersion`, which
 *   answers with the existing version for a definition it has) and `CreateSchema` for a schema
 *   name the registry does not have yet (`glue:CreateSchema`).
 *
 * Errors: an unknown or malformed version id, or a schema the registry does not have, is
 * UnknownSchemaError (permanent), but only while the registry this client is configured for
 * exists: Glue answers EntityNotFoundException for a schema looked up in a registry that does not
 * exist (a wrong GLUE_SCHEMA_REGISTRY_NAME, region or account) exactly as for a schema that is
 * missing, and reading that as "unknown" would dead-letter every healthy record. Throttling,
 * access denied (the deployment's fault, not the record's), a missing registry, 5xx and network
 * errors are SchemaRegistryUnavailableError (transient: retried and alarmed, never dead-lettered).
 *
 * A version is written with only once Glue says it is AVAILABLE. RegisterSchemaVersion may answer
 * before its compatibility check is done (PENDING: the version is then polled with
 * GetSchemaVersion, as Glue's API reference advises); FAILURE (the definition breaks the schema's
 * compatibility mode) or DELETING is no version to write with: UnknownSchemaError, as Confluent's
 * 409 is. A check still pending after the polls is SchemaRegistryUnavailableError.
 */
export interface GlueRegistryOptions {
  /**
   * Where producers register and look up schemas. A consumer that names it (here or with
   * GLUE_SCHEMA_REGISTRY_NAME) also has an unknown version id checked against it: only while this
   * registry exists is "version not found" an answer about the record.
   * @default GLUE_SCHEMA_REGISTRY_NAME, else "default-registry"
   */
  readonly registryName?: string;
  /** The Glue client, with the function's credentials and region. @default new GlueClient({}) */
  readonly client?: GlueClient;
  /** Compatibility of a schema CreateSchema makes. @default "BACKWARD" (Glue's default) */
  readonly compatibility?:
    | "NONE"
    | "DISABLED"
    | "BACKWARD"
    | "BACKWARD_ALL"
    | "FORWARD"
    | "FORWARD_ALL"
    | "FULL"
    | "FULL_ALL";
  /** Where `GLUE_SCHEMA_REGISTRY_NAME` is read from. @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /**
   * Waits (ms) between polls of a version Glue is still checking (PENDING); once they are spent,
   * SchemaRegistryUnavailableError. @default [100, 200, 400, 800, 1600, 2000, 2000, 2000] (about 9 s)
   */
  readonly pendingPollsMs?: readonly number[];
}

export { GLUE_REGISTRY_ENV };

const DEFAULTS = { registryName: "default-registry", compatibility: "BACKWARD" } as const;

const nameOf = (error: unknown) => (error as { name?: string }).name ?? "";

/** Glue's answers about the request itself; everything else (access, throttling, 5xx, network) may pass. */
function classify(error: unknown, what: string): Error {
  const name = nameOf(error);
  if (name === "EntityNotFoundException" || name === "InvalidInputException") {
    return new UnknownSchemaError(`${what}: ${name}: ${(error as Error).message}`, { cause: error });
  }
  return new SchemaRegistryUnavailableError(`${what}: ${name || "error"}: ${(error as Error).message}`, {
    cause: error,
  });
}

const FORMATS: ReadonlySet<string> = new Set(["AVRO", "PROTOBUF", "JSON"]);

/** Waits between polls of a PENDING version (about 9 s in all: well inside a function's time). */
const GLUE_PENDING_POLLS_MS: readonly number[] = [100, 200, 400, 800, 1600, 2000, 2000, 2000];

/**
 * An AWS Glue Schema Registry client (see `GlueRegistryOptions`), for decoders and encoders. Create it
 * once per container: it caches each schema by version id and each version id by schema.
 */
export function glueRegistry(options: GlueRegistryOptions = {}): SchemaRegistry {
  const env = options.env ?? process.env;
  const client = options.client ?? new GlueClient({});
  const namedRegistry = options.registryName ?? env[GLUE_REGISTRY_ENV.registryName];
  const registryName = namedRegistry ?? DEFAULTS.registryName;
  /**
   * An EntityNotFoundException means "no such schema" only if the registry exists; a missing
   * registry is the deployment's fault. `glue:GetRegistry` is granted with the registry's other
   * actions (`grantSchemaRegistryAccess`). Asked only on this rare path, never cached.
   */
  async function notFound(error: unknown, what: string): Promise<Error> {
    if (nameOf(error) !== "EntityNotFoundException") return classify(error, what);
    try {
      await client.send(new GetRegistryCommand({ RegistryId: { RegistryName: registryName } }));
    } catch (registryError) {
      if (nameOf(registryError) === "EntityNotFoundException") {
        return new SchemaRegistryUnavailableError(
          `${what}: the Glue registry '${registryName}' does not exist here (check GLUE_SCHEMA_REGISTRY_NAME, the region and the account): ${(error as Error).message}`,
          { cause: error },
        );
      }
      return new SchemaRegistryUnavailableError(
        `${what}: could not check the Glue registry '${registryName}': ${nameOf(registryError) || "error"}: ${(registryError as Error).message}`,
        { cause: error },
      );
    }
    return classify(error, what);
  }
  // Each id is fetched once per container, even under concurrent records (see schemaCache.ts).
  const schemas = createPromiseCache(fetchUncached);
  const ids = createPromiseCache((k: string) => {
    const [subject, format, definition, register] = JSON.parse(k) as [string, SchemaFormat, string, boolean];
    return idForUncached({ subject, format, definition }, { register });
  });
  return {
    kind: "glue",
    fetchSchema: (id) => schemas.get(id),
    async idFor(schema: SchemaSubject, { register }) {
      return ids.get(JSON.stringify([schema.subject, schema.format, schema.definition, register]));
    },
  };
  async function fetchUncached(id: string): Promise<RegistrySchema> {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) {
      throw new UnknownSchemaError(`'${id}' is not a Glue schema version id`);
    }
    let out: { SchemaDefinition?: string; DataFormat?: string };
    try {
      out = await client.send(new GetSchemaVersionCommand({ SchemaVersionId: id }));
    } catch (error) {
      // A version id is global to the account and region; with no registry named, Glue's answer stands.
      const what = `Glue schema version ${id}`;
      throw namedRegistry ? await notFound(error, what) : classify(error, what);
    }
    if (!out.SchemaDefinition || !out.DataFormat || !FORMATS.has(out.DataFormat)) {
      throw new UnknownSchemaError(`Glue schema version ${id} has no usable definition (${out.DataFormat})`);
    }
    return { id, format: out.DataFormat as SchemaFormat, definition: out.SchemaDefinition };
  }
  async function idForUncached(schema: SchemaSubject, { register }: { register: boolean }): Promise<string> {
    const SchemaId = { RegistryName: registryName, SchemaName: schema.subject };
    const what = `Glue schema ${registryName}/${schema.subject}`;
    try {
      if (!register) {
        const out = await client.send(
          new GetSchemaByDefinitionCommand({ SchemaId, SchemaDefinition: schema.definition }),
        );
        if (!out.SchemaVersionId) throw new UnknownSchemaError(`${what}: no version for this definition`);
        return await available(out.SchemaVersionId, out.Status, what);
      }
      const registered = await client
        .send(new RegisterSchemaVersionCommand({ SchemaId, SchemaDefinition: schema.definition }))
        .catch((error: unknown) => {
          // No schema of this name yet: CreateSchema below makes it, with this as its first version.
          if (nameOf(error) === "EntityNotFoundException") return undefined;
          throw error;
        });
      if (registered?.SchemaVersionId)
        return await available(registered.SchemaVersionId, registered.Status, what);
      const created = await client.send(
        new CreateSchemaCommand({
          RegistryId: { RegistryName: registryName },
          SchemaName: schema.subject,
          DataFormat: schema.format,
          Compatibility: options.compatibility ?? DEFAULTS.compatibility,
          SchemaDefinition: schema.definition,
        }),
      );
      if (!created.SchemaVersionId) throw new UnknownSchemaError(`${what}: CreateSchema returned no version`);
      return await available(created.SchemaVersionId, created.SchemaVersionStatus, what);
    } catch (error) {
      if (error instanceof UnknownSchemaError || error instanceof SchemaRegistryUnavailableError) throw error;
      throw await notFound(error, what);
    }
  }

  /** The version id once Glue has it AVAILABLE (see the Errors note above). */
  async function available(id: string, status: string | undefined, what: string): Promise<string> {
    for (let poll = 0; ; poll++) {
      // An answer without a status (older Glue-compatible servers) is taken as available.
      if (status === undefined || status === "AVAILABLE") return id;
      if (status !== "PENDING") {
        throw new UnknownSchemaError(
          `${what}: version ${id} is ${status}${status === "FAILURE" ? " (it breaks the schema's compatibility mode)" : ""}`,
        );
      }
      const wait = (options.pendingPollsMs ?? GLUE_PENDING_POLLS_MS)[poll];
      if (wait === undefined) {
        throw new SchemaRegistryUnavailableError(
          `${what}: version ${id} still PENDING after ${poll} polls (Glue's compatibility check)`,
        );
      }
      await sleep(wait);
      status = (await client.send(new GetSchemaVersionCommand({ SchemaVersionId: id }))).Status;
    }
  }
}
