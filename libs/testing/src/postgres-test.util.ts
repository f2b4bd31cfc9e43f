import { Client } from 'pg';

/** The PostgreSQL server the integration tests use (trust auth, database `test`). */
export const TEST_DATABASE_URL =
  process.env.FATHOM_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Drops a suite's schemas from the test database (CASCADE), for its afterAll. */
export async function dropTestSchemas(...schemas: string[]): Promise<void> {
  const client = new Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

/** Remembers environment variables as they are; the function returned puts them back. */
export function saveEnv(keys: readonly string[]): () => void {
  const saved = keys.map((k) => [k, process.env[k]] as const);
  return () => {
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
}
