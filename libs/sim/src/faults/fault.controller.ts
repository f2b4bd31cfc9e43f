import {
  faultSpecSchema,
  type FaultKind,
  type FaultOf,
  type FaultSpec,
  type FaultSpecInput,
} from './fault.types';

export interface ActiveFault {
  spec: FaultSpec;
  /** Epoch ms when set. */
  since: number;
  /** Epoch ms when it clears itself, or null. */
  until: number | null;
}

/**
 * Run-time switchboard for planted faults. One fault per kind (setting a kind again replaces
 * it). Expiry is checked lazily on read, so an expired fault costs nothing.
 */
export class FaultController {
  private readonly active = new Map<FaultKind, ActiveFault>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Validates and switches a fault on; throws a ZodError on a bad spec. */
  set(input: FaultSpecInput): ActiveFault {
    const spec = faultSpecSchema.parse(input);
    const since = this.now();
    const entry: ActiveFault = {
      spec,
      since,
      until: spec.durationMs === undefined ? null : since + spec.durationMs,
    };
    this.active.set(spec.kind, entry);
    return entry;
  }

  /** Switches a fault off; returns whether it was on. */
  clear(kind: FaultKind): boolean {
    return this.active.delete(kind);
  }

  clearAll(): void {
    this.active.clear();
  }

  get<K extends FaultKind>(kind: K): FaultOf<K> | undefined {
    const entry = this.active.get(kind);
    if (entry === undefined) return undefined;
    if (entry.until !== null && this.now() >= entry.until) {
      this.active.delete(kind);
      return undefined;
    }
    return entry.spec as FaultOf<K>;
  }

  list(): ActiveFault[] {
    for (const kind of [...this.active.keys()]) this.get(kind);
    return [...this.active.values()];
  }
}
