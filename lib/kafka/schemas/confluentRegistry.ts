import { CONFLUENT_REGISTRY_ENV } from "./env.ts";
import { SchemaRegistryUnavailableError, UnknownSchemaError } from "./errors.ts";
import type { RegistrySchema, SchemaFormat, SchemaRegistry, SchemaSubject } from "./registry.ts";
import { createPromiseCache } from "./schemaCache.ts";

/**
 * A Confluent Schema Registry client over its REST API (the subset a consumer and a producer need):
 *
 * - `GET /schemas/ids/{id}` → `{ schema, schemaType? }` (no `schemaType` means AVRO)
 * - `POST /subjects/{subject}/versions` `{ schema, schemaType }` → `{ id }` (register; an existing schema gets its id)
 * - `POST /subjects/{subject}` `{ schema, schemaType }` → `{ id, version, … }` (look up)
 *
 * Only the registry's own answers are permanent (`UnknownSchemaError`): 404 with error code 40403
 * for an id; 404 with 40401 or 40403 for a lookup; 409 (incompatible) or 422 with 42201/42202 for a
 * registration. Every other answer, a bare 404 included, is `SchemaRegistryUnavailableError`.
 *
 * Auth is HTTP basic: Confluent Cloud's API key and secret, or a user and password. They come from
 * the options, or the environment, or a Secrets Manager secret holding `{"username","password"}`
 * (the format the Lambda event source mapping's BASIC_AUTH expects, so both can share one secret).
 */
export interface ConfluentRegistryOptions {
  /**
   * The registry's base URL (with any path prefix, e.g. Apicurio's `/apis/ccompat/v7`).
   * @default SCHEMA_REGISTRY_URL
   */
  readonly url?: string;
  /**
   * HTTP basic credentials: an API key and secret, a user and password, or a Secrets Manager secret.
   * @default from SCHEMA_REGISTRY_API_KEY + SCHEMA_REGISTRY_API_SECRET, or SCHEMA_REGISTRY_USERNAME +
   * SCHEMA_REGISTRY_PASSWORD, or the secret named by SCHEMA_REGISTRY_SECRET_ARN; none: no auth
   */
  readonly auth?: ConfluentAuth;
  /** Per request. @default 5000 ms */
  readonly timeoutMs?: number;
  /** Injectable fetch (tests count requests with it). @default globalThis.fetch */
  readonly fetch?: typeof fetch;
  /** Where the `SCHEMA_REGISTRY_*` defaults are read from. @default process.env */
  readonly env?: NodeJS.ProcessEnv;
}

export type ConfluentAuth =
  | { readonly username: string; readonly password: string }
  | { readonly apiKey: string; readonly apiSecret: string }
  /** A Secrets Manager secret with `{"username": …, "password": …}`; read once per container. */
  | { readonly secretArn: string; readonly readSecret?: (arn: string) => Promise<string> };

export { CONFLUENT_REGISTRY_ENV };

const DEFAULTS = { timeoutMs: 5000 } as const;

function authFromEnv(env: NodeJS.ProcessEnv): ConfluentAuth | undefined {
  const E = CONFLUENT_REGISTRY_ENV;
  if (env[E.apiKey] && env[E.apiSecret]) return { apiKey: env[E.apiKey]!, apiSecret: env[E.apiSecret]! };
  if (env[E.username] && env[E.password]) return { username: env[E.username]!, password: env[E.password]! };
  if (env[E.secretArn]) return { secretArn: env[E.secretArn]! };
  return undefined;
}

async function readSecretFromSecretsManager(arn: string): Promise<string> {
  // Loaded only when a secret is used, so consumers without one do not pay for the client.
  const { SecretsManagerClient, GetSecretValueCommand } = await import("@aws-sdk/client-secrets-manager");
  const out = await new SecretsManagerClient({}).send(new GetSecretValueCommand({ SecretId: arn }));
  if (out.SecretString === undefined) throw new Error(`secret ${arn} has no SecretString`);
  return out.SecretString;
}

async function basicHeader(auth: ConfluentAuth | undefined): Promise<string | undefined> {
  if (!auth) return undefined;
  let user: string;
  let pass: string;
  if ("secretArn" in auth) {
    const text = await (auth.readSecret ?? readSecretFromSecretsManager)(auth.secretArn);
    const parsed = JSON.parse(text) as { username?: string; password?: string };
    if (!parsed.username || !parsed.password) {
      throw new Error(`secret ${auth.secretArn} lacks "username" and "password"`);
    }
    user = parsed.username;
    pass = parsed.password;
  } else if ("apiKey" in auth) {
    user = auth.apiKey;
    pass = auth.apiSecret;
  } else {
    user = auth.username;
    pass = auth.password;
  }
  return `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;
}

const FORMATS: ReadonlySet<string> = new Set(["AVRO", "PROTOBUF", "JSON"]);

/**
 * Schema Registry's own error codes (its REST API reference, "Errors"). 40402 (version not found)
 * would apply to `GET /subjects/{s}/versions/{v}`, which this client never calls.
 */
const ERROR_CODE = {
  subjectNotFound: 40401,
  schemaNotFound: 40403,
  incompatible: 409,
  /** 42201 invalid schema, 42202 invalid version. */
  invalidSchema: [42201, 42202],
} as const;

/**
 * True only when the registry itself gave this answer: the HTTP status AND one of its own error
 * codes in the JSON body. A bare 404 is not "unknown schema": a URL without its path prefix
 * (Apicurio's `/apis/ccompat/v7`, a proxy's), a load balancer's error page or a wrong host all
 * answer 404 for every id, and reading that as "unknown" would dead-letter every healthy framed
 * record. Anything that is not such an answer is the registry being unreachable or misconfigured:
 * `SchemaRegistryUnavailableError`, transient, retried and alarmed, never a dead letter.
 */
function registryAnswered(
  r: { status: number; json: unknown },
  status: number,
  codes: readonly number[],
): boolean {
  const code = (r.json as { error_code?: unknown } | undefined)?.error_code;
  return r.status === status && typeof code === "number" && codes.includes(code);
}

/**
 * A Confluent Schema Registry client (see `ConfluentRegistryOptions`), for decoders and encoders.
 * Create it once per container: it caches each schema by id and each id by schema. Throws at once
 * when no URL is given or set.
 */
export function confluentRegistry(options: ConfluentRegistryOptions = {}): SchemaRegistry & {
  readonly url: string;
} {
  const env = options.env ?? process.env;
  const url = (options.url ?? env[CONFLUENT_REGISTRY_ENV.url] ?? "").replace(/\/+$/, "");
  if (!url)
    throw new Error(`no Confluent Schema Registry URL: pass url or set ${CONFLUENT_REGISTRY_ENV.url}`);
  const doFetch = options.fetch ?? globalThis.fetch;
  const timeoutMs = options.timeoutMs ?? DEFAULTS.timeoutMs;
  const auth = options.auth ?? authFromEnv(env);
  // The credentials are resolved once per container (a failure is retried on the next request).
  const header = createPromiseCache((_: "auth") =>
    basicHeader(auth).catch((error: unknown) => {
      throw new SchemaRegistryUnavailableError(
        `could not read the schema registry credentials: ${(error as Error).message}`,
        { cause: error },
      );
    }),
  );

  async function request(
    method: "GET" | "POST",
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: unknown }> {
    const authorization = await header.get("auth");
    let res: Response;
    try {
      res = await doFetch(`${url}${path}`, {
        method,
        headers: {
          accept: "application/vnd.schemaregistry.v1+json, application/json",
          ...(body !== undefined ? { "content-type": "application/vnd.schemaregistry.v1+json" } : {}),
          ...(authorization ? { authorization } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new SchemaRegistryUnavailableError(
        `schema registry ${url} unreachable: ${(error as Error).message}`,
        { cause: error },
      );
    }
    const text = await res.text().catch(() => "");
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, json };
  }

  const describe = (r: { status: number; json: unknown }) => {
    const j = r.json as { error_code?: number; message?: string } | undefined;
    return `HTTP ${r.status}${j?.error_code ? ` (${j.error_code})` : ""}${j?.message ? `: ${j.message}` : ""}`;
  };

  const unavailable = (what: string, r: { status: number; json: unknown }) =>
    new SchemaRegistryUnavailableError(`schema registry ${url}: ${what}: ${describe(r)}`);

  // Each id is fetched once per container, even under concurrent records (see schemaCache.ts).
  const schemas = createPromiseCache(fetchUncached);
  const ids = createPromiseCache((k: string) => {
    const [subject, format, definition, register] = JSON.parse(k) as [string, SchemaFormat, string, boolean];
    return idForUncached({ subject, format, definition }, { register });
  });
  return {
    kind: "confluent",
    url,
    fetchSchema: (id) => schemas.get(id),
    async idFor(schema: SchemaSubject, { register }) {
      return ids.get(JSON.stringify([schema.subject, schema.format, schema.definition, register]));
    },
  };
  async function fetchUncached(id: string): Promise<RegistrySchema> {
    if (!/^\d+$/.test(id)) throw new UnknownSchemaError(`'${id}' is not a Confluent schema id`);
    const r = await request("GET", `/schemas/ids/${id}`);
    if (registryAnswered(r, 404, [ERROR_CODE.schemaNotFound]))
      throw new UnknownSchemaError(`schema id ${id} is not in ${url}: ${describe(r)}`);
    if (r.status < 200 || r.status > 299) throw unavailable(`schema id ${id}`, r);
    const j = r.json as { schema?: unknown; schemaType?: unknown } | undefined;
    if (typeof j?.schema !== "string") throw unavailable(`schema id ${id} answered without a schema`, r);
    const format = (j.schemaType ?? "AVRO") as SchemaFormat;
    if (!FORMATS.has(format))
      throw new UnknownSchemaError(`schema id ${id} has type '${String(j.schemaType)}'`);
    return { id, format, definition: j.schema };
  }
  async function idForUncached(schema: SchemaSubject, { register }: { register: boolean }): Promise<string> {
    const subject = encodeURIComponent(schema.subject);
    const body = {
      schema: schema.definition,
      ...(schema.format !== "AVRO" ? { schemaType: schema.format } : {}),
    };
    const r = await request(
      "POST",
      register ? `/subjects/${subject}/versions` : `/subjects/${subject}`,
      body,
    );
    const j = r.json as { id?: unknown } | undefined;
    if (r.status >= 200 && r.status <= 299 && typeof j?.id === "number") return String(j.id);
    const refused = register
      ? registryAnswered(r, 409, [ERROR_CODE.incompatible]) ||
        registryAnswered(r, 422, ERROR_CODE.invalidSchema)
      : registryAnswered(r, 404, [ERROR_CODE.subjectNotFound, ERROR_CODE.schemaNotFound]);
    if (refused) {
      throw new UnknownSchemaError(
        `schema for subject '${schema.subject}' ${register ? "could not be registered" : "is not registered"}: ${describe(r)}`,
      );
    }
    throw unavailable(`subject '${schema.subject}'`, r);
  }
}

export type { RegistrySchema };
