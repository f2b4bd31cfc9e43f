/** Thrown when a text cannot be read as the format it was taken for. The message says why. */
export class GpuParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GpuParseError';
  }
}
