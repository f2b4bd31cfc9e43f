import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Reads a captured fixture from libs/gpu/src/__fixtures__ (see SOURCES.md there). */
export function readGpuFixture(relativePath: string): string {
  return readFileSync(join(__dirname, '..', '__fixtures__', relativePath), 'utf8');
}

export const GPU_FIXTURES_DIR = join(__dirname, '..', '__fixtures__');
