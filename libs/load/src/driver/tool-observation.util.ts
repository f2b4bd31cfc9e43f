import { MAX_TOOL_CALLS_PER_RECORD, type ToolCallObservation, type ToolContract } from '@fathom/contracts';
import { DeclaredToolContract, checkShapeAgainstSchema, observeBody } from '@fathom/semantic';

/** What a driver knows of one tool before calling it: its reported name and declared contract. */
export interface ToolObserver {
  /** The name drift signals and reports use (the contract's `tool`, else the tool's or step's). */
  readonly tool: string;
  readonly declaredVersion: string | undefined;
  readonly contract: DeclaredToolContract | null;
}

export function toolObserverOf(
  name: string,
  contract: ToolContract | undefined,
  invokePath?: string,
): ToolObserver {
  return {
    tool: (contract?.tool ?? name).slice(0, 64),
    declaredVersion: contract?.version,
    contract: contract ? new DeclaredToolContract(contract, invokePath) : null,
  };
}

/**
 * One tool answer as the record keeps it: the version that answered (the target's
 * `x-tool-version` header, else the declared one, else `unknown`), the status, and the bounded
 * shape of a JSON body (enum values kept only at the paths the contract constrains).
 */
export function observeToolCall(
  observer: ToolObserver,
  status: number,
  headers: Record<string, string | string[] | undefined>,
  text: string,
  capped: boolean,
): ToolCallObservation {
  const header = headers['x-tool-version'];
  const answered = (Array.isArray(header) ? header[0] : header)?.trim();
  const version = (answered || observer.declaredVersion || 'unknown').slice(0, 32);
  return {
    tool: observer.tool,
    version,
    status,
    ...observeBody(text, capped, observer.contract?.valuePaths),
  };
}

/** A call that got no answer (transport error, timeout). */
export function unansweredToolCall(observer: ToolObserver, status: number): ToolCallObservation {
  return {
    tool: observer.tool,
    version: (observer.declaredVersion ?? 'unknown').slice(0, 32),
    status,
    body: 'no-response',
  };
}

/**
 * The answer breaks the declared contract of its version: not JSON, or its shape violates the
 * declared schema. False when no contract (or none for that version) is declared, or the
 * declaration is unusable: nothing to break.
 */
export function breaksContract(observer: ToolObserver, call: ToolCallObservation): boolean {
  const declared = observer.contract?.forVersion(call.version);
  if (!declared?.ok || call.status >= 300) return false;
  if (call.shape === undefined) return true;
  return checkShapeAgainstSchema(declared.schema, call.shape, declared.root).violations.length > 0;
}

/** Appends within the record's bound (MAX_TOOL_CALLS_PER_RECORD); later calls are not recorded. */
export function pushToolCall(calls: ToolCallObservation[], call: ToolCallObservation): void {
  if (calls.length < MAX_TOOL_CALLS_PER_RECORD) calls.push(call);
}
