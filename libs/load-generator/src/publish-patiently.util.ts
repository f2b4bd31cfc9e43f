/**
 * Runs `publish` until it succeeds, with backoff (250 ms doubling to 5 s), for up to
 * `patienceMs`: a shard's lifecycle event must outlive a broker restart, or the run waits for a
 * shard end that never comes. Resolves false (never throws) once patience ran out.
 */
export async function publishPatiently(
  publish: () => Promise<void>,
  patienceMs: number,
  onError: (error: Error, attempt: number) => void,
): Promise<boolean> {
  const deadline = Date.now() + patienceMs;
  for (let attempt = 0; ; attempt++) {
    try {
      await publish();
      return true;
    } catch (error) {
      onError(error as Error, attempt);
      if (Date.now() >= deadline) return false;
      const delay = Math.min(5_000, 250 * 2 ** attempt, Math.max(0, deadline - Date.now()));
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
