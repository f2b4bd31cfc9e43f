/** Thrown by a command to exit with a specific code once it has printed its own message. */
export class CliExit extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}
