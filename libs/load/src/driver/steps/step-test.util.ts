import { RequestCancel, type DriverRequest } from '../request-outcome';

/** A request as the engine hands it to a driver, for calling one step client directly in tests. */
export function stepTestRequest(): DriverRequest {
  return {
    requestId: 'req-1',
    headers: { 'x-fathom-run': 'run-1' },
    cancel: new RequestCancel(),
    startMono: performance.now(),
    item: { messages: [], text: '', inputTokensClient: 0 },
    gate: () => true,
  };
}
