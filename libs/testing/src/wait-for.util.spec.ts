import { waitFor } from './wait-for.util';

describe(waitFor.name, () => {
  it('resolves with the first truthy value', async () => {
    let calls = 0;
    await expect(waitFor(() => (++calls >= 3 ? `after ${calls}` : null), { intervalMs: 1 })).resolves.toBe(
      'after 3',
    );
  });

  it('times out naming what it waited for and the last error', async () => {
    const failing = waitFor(
      () => {
        throw new Error('broker not ready');
      },
      { timeoutMs: 30, intervalMs: 5, description: 'the broker' },
    );
    await expect(failing).rejects.toThrow('timed out after 30 ms waiting for the broker: broker not ready');
  });
});
