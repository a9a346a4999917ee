/** The console's own errors: the server answers each with its status and message. */

/** A name that names nothing: 404. */
export class ConsoleNotFound extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConsoleNotFound";
  }
}

/** A request the console cannot act on: 400. */
export class BadRequest extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BadRequest";
  }
}
