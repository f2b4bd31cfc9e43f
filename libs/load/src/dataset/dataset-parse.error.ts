/** A dataset or trace file that does not parse; names the file and the 1-based line (0: unreadable). */
export class DatasetParseError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly reason: string,
  ) {
    super(`${file}:${line}: ${reason}`);
    this.name = 'DatasetParseError';
  }
}
