/** A schema as a registry stores it: the writer's schema of the records framed with its id. */
export interface RegistrySchema {
  /** Confluent: the numeric id as text; Glue: the schema version UUID. */
  readonly id: string;
  /** The schema's format. */
  readonly format: SchemaFormat;
  /** The schema's text: Avro JSON, a .proto file, or a JSON Schema document. */
  readonly definition: string;
}

/** The schema formats the registries and the decoders know: Avro, Protobuf and JSON Schema. */
export type SchemaFormat = "AVRO" | "PROTOBUF" | "JSON";

/** What the producer side names a schema by. */
export interface SchemaSubject {
  /** Confluent: the subject (`<topic>-value` by the default naming strategy); Glue: the schema name. */
  readonly subject: string;
  /** The schema's format. */
  readonly format: SchemaFormat;
  /** The schema's text, as it is registered. */
  readonly definition: string;
}

/**
 * A schema registry client: `confluentRegistry()` or `glueRegistry()`. Decoders fetch writer schemas
 * from it by the id in a record's framing; encoders get the id to frame with.
 */
export interface SchemaRegistry {
  /** Which registry it is, and so which framing its ids go in: Confluent's or Glue's. */
  readonly kind: "confluent" | "glue";
  /**
   * The writer's schema for an id from a record's framing. Throws UnknownSchemaError when the
   * registry says there is no such id, SchemaRegistryUnavailableError when it cannot say.
   */
  fetchSchema(id: string): Promise<RegistrySchema>;
  /**
   * The id records of `schema` are framed with: registered first when `register` is true (a
   * registry answers with the existing id for a schema it has), else looked up.
   */
  idFor(schema: SchemaSubject, options: { register: boolean }): Promise<string>;
}
