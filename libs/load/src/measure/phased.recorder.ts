import type { LoadPhase } from '@fathom/contracts';
import { WindowRecorder, type RetiredWindow, type WindowHistograms } from './window.recorder';

/** A load phase as the engine enters it; `elapsedMs` is added per window. */
export type PhaseTag = Omit<LoadPhase, 'elapsedMs'>;

/** One phase's recorder and what the engine needs to retire it. */
export interface PhaseSlot {
  readonly tag: PhaseTag;
  readonly recorder: WindowRecorder;
  /** What each record of the phase carries (one object, shared). */
  readonly ref: { index: number; segment: PhaseTag['segment'] };
  /** Requests that started in this phase and have not finished. */
  inFlight: number;
  /** performance.now() when the phase last became current; ms it was current before that. */
  enteredMono: number;
  activeMs: number;
}

/**
 * One `WindowRecorder` per load phase (sweep step x warm-up/measured/cool-down), so a request is
 * counted in the phase it started in even when it ends in the next one. Every tick retires a
 * window for the current phase (empty or not, as before) and for each earlier phase that still
 * counted something; a past phase with nothing in flight and nothing counted is forgotten.
 * Window seqs are shared, so (shard, seq) stays unique. Single owner (the engine's event loop).
 */
export class PhasedRecorder {
  private seq = 0;
  private readonly slots = new Map<string, PhaseSlot>();
  private currentSlot: PhaseSlot;

  constructor(
    private readonly shard: number,
    private readonly windowMs: number,
    initial: PhaseTag,
  ) {
    this.currentSlot = this.enter(initial);
  }

  get current(): PhaseSlot {
    return this.currentSlot;
  }

  /** Makes `tag` the current phase (a phase entered twice keeps its recorder). */
  enter(tag: PhaseTag, nowMono = performance.now()): PhaseSlot {
    const key = `${tag.index}/${tag.kind}/${tag.segment}`;
    let slot = this.slots.get(key);
    if (!slot) {
      slot = {
        tag,
        recorder: new WindowRecorder(this.shard, this.windowMs, () => this.seq++),
        ref: { index: tag.index, segment: tag.segment },
        inFlight: 0,
        enteredMono: nowMono,
        activeMs: 0,
      };
      this.slots.set(key, slot);
    } else if (slot !== this.currentSlot) slot.enteredMono = nowMono;
    const previous = this.currentSlot as PhaseSlot | undefined;
    if (previous !== undefined && previous !== slot)
      previous.activeMs += Math.max(0, nowMono - previous.enteredMono);
    this.currentSlot = slot;
    return slot;
  }

  /** Retires this tick's windows: the current phase's always, others' when they counted something. */
  rotate(
    windowStart: number,
    windowMs: number,
    nowMono = performance.now(),
  ): { phase: LoadPhase; retired: RetiredWindow }[] {
    const out: { phase: LoadPhase; retired: RetiredWindow }[] = [];
    for (const [key, slot] of this.slots) {
      const current = slot === this.currentSlot;
      if (!current && slot.recorder.idle) {
        if (slot.inFlight === 0) this.slots.delete(key);
        continue;
      }
      const elapsedMs = slot.activeMs + (current ? Math.max(0, nowMono - slot.enteredMono) : 0);
      out.push({ phase: { ...slot.tag, elapsedMs }, retired: slot.recorder.rotate(windowStart, windowMs) });
    }
    return out;
  }

  /** Takes back encoded histograms for reuse (any recorder may reuse them). */
  recycle(histograms: WindowHistograms): void {
    this.currentSlot.recorder.recycle(histograms);
  }
}
