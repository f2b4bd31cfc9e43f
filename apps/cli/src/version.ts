import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Fathom's version: the `version` of the package.json above this file (sources or dist/). */
export function fathomVersion(from: string = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'fathom' && pkg.version) return pkg.version;
    }
    if (dirname(dir) === dir) return 'unknown';
  }
}
