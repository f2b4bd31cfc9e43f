import { realpath } from 'node:fs/promises';
import { isAbsolute, resolve, sep } from 'node:path';

/** A file a caller named that this service will not read; the message never holds its contents. */
export class FileAccessError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FileAccessError';
  }
}

/**
 * The real path of `requested` inside directory `root`, or a FileAccessError. Relative paths
 * are taken from `root`; `..` segments are refused outright; symbolic links are resolved, and
 * a path whose real location is outside `root` is refused, so a link cannot lead out. `root`
 * null: no file may be read (the caller says where data can come from instead).
 */
export async function confinedPath(requested: string, root: string | null, what: string): Promise<string> {
  if (root === null)
    throw new FileAccessError(`${what}: no files are read here (no data directory is configured)`);
  if (requested.includes('\0')) throw new FileAccessError(`${what}: a path with a NUL character`);
  if (requested.split(/[\\/]/).includes('..'))
    throw new FileAccessError(`${what}: a path with '..' is refused`);
  let realRoot: string;
  try {
    realRoot = await realpath(root);
  } catch {
    throw new FileAccessError(`${what}: the data directory does not exist`);
  }
  const candidate = isAbsolute(requested) ? requested : resolve(realRoot, requested);
  let real: string;
  try {
    real = await realpath(candidate);
  } catch {
    throw new FileAccessError(`${what}: no such file in the data directory`);
  }
  if (real !== realRoot && !real.startsWith(realRoot.endsWith(sep) ? realRoot : realRoot + sep)) {
    throw new FileAccessError(`${what}: outside the data directory`);
  }
  return real;
}
