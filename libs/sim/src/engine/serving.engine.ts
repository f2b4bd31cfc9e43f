import type { SimConfig } from '../config/sim-config';
import type { EngineClock } from './clock';
import { KvCache } from './kv-cache';

/** What the engine needs of a request; text and logprobs live outside, keyed by token index. */
export interface SequenceRequest {
  promptIds: ArrayLike<number>;
  /** Tokens to generate (the plan's length). */
  outputTokens: number;
  /** Called when token `index` has been sampled (model time `atMs`). */
  onToken(index: number, atMs: number): void;
  onFinish(timing: SequenceTiming): void;
}

/** Per-request ground truth, in model ms (multiply by timeScale for wall ms). */
export interface SequenceTiming {
  arrivalMs: number;
  firstScheduledMs: number | null;
  firstTokenMs: number | null;
  finishMs: number;
  /** Prompt tokens served from the prefix cache at first admission. */
  cachedPromptTokens: number;
  preemptions: number;
  generated: number;
  aborted: boolean;
}

export interface SequenceHandle {
  abort(): void;
}

export interface EngineStats {
  running: number;
  waiting: number;
  kvUsage: number;
  kvCapacityBlocks: number;
  prefixQueriedTokens: number;
  prefixHitTokens: number;
  preemptions: number;
  promptTokens: number;
  generationTokens: number;
  steps: number;
  /** Model ms the engine spent inside steps (busy time, for GPU utilisation). */
  busyMs: number;
  /** Tokens (prefill + decode) the last step processed. */
  lastStepTokens: number;
  lastStepDecodeSeqs: number;
}

export interface StepObserver {
  (step: { tokens: number; decodeSeqs: number; durationMs: number }): void;
}

type EngineConfig = SimConfig['engine'];

class Sequence {
  phase: 'waiting' | 'prefill' | 'decode' = 'waiting';
  /** Tokens whose KV is computed. */
  computed = 0;
  /** Tokens that must be computed before the next token can be sampled. */
  prefillTarget = 0;
  generated = 0;
  held: number[] = [];
  privateBlocks = 0;
  firstScheduledMs: number | null = null;
  firstTokenMs: number | null = null;
  cachedPromptTokens = 0;
  preemptions = 0;
  admitted = false;
  done = false;
  chunk = 0;

  constructor(
    readonly request: SequenceRequest,
    readonly arrivalMs: number,
  ) {}

  /** Ids of prompt + generated-so-far (what a recompute must prefill). */
  contextIds(): ArrayLike<number> {
    const prompt = this.request.promptIds;
    if (this.generated === 0) return prompt;
    const ids = new Uint32Array(prompt.length + this.generated);
    for (let i = 0; i < prompt.length; i++) ids[i] = prompt[i];
    // Generated token ids only need to be stable per position for hashing.
    for (let i = 0; i < this.generated; i++) ids[prompt.length + i] = 0x5eed0000 + i;
    return ids;
  }
}

/**
 * Continuous-batching serving engine, after vLLM V1's scheduler.
 *
 * Each step:
 *  1. every decoding sequence gets one token slot (a new KV block when it crosses a block
 *     boundary); if the cache is full the most recently admitted sequence is preempted
 *     (blocks freed, recomputed later: prompt + tokens so far are prefilled again);
 *  2. sequences still prefilling take chunks from the token budget;
 *  3. waiting sequences are admitted FCFS while fewer than `maxNumSeqs` run, the budget lasts
 *     and their blocks fit (otherwise they wait: no admission past KV capacity).
 *  Step time (model ms) = stepBaseMs + decodePerSeqMs x decodeSeqs + prefillPerTokenMs x
 *  prefillTokens + attentionPerKTokenMs x contextTokens / 1000 + the latency_spike fault.
 *  At the end of the step each decoding sequence, and each one whose prefill completed, samples
 *  one token.
 */
export class ServingEngine {
  private readonly waiting: Sequence[] = [];
  private readonly running: Sequence[] = [];
  readonly kv: KvCache;
  private stepping = false;
  private nextStepAtMs = 0;
  private readonly observers: StepObserver[] = [];
  readonly stats = {
    preemptions: 0,
    promptTokens: 0,
    generationTokens: 0,
    steps: 0,
    busyMs: 0,
    lastStepTokens: 0,
    lastStepDecodeSeqs: 0,
  };

  constructor(
    private readonly config: EngineConfig,
    readonly clock: EngineClock,
    private readonly extraStepMs: () => number = () => 0,
    private readonly capacityFraction: () => number = () => 1,
  ) {
    this.kv = new KvCache(config.blockSize, config.numBlocks, config.enablePrefixCaching);
  }

  onStep(observer: StepObserver): void {
    this.observers.push(observer);
  }

  /** Largest prompt + output the cache could ever hold (requests above are refused up front). */
  maxTokensPerSequence(): number {
    return Math.min(
      this.config.maxModelLen,
      Math.floor(this.config.numBlocks * this.capacityFraction()) * this.config.blockSize,
    );
  }

  submit(request: SequenceRequest): SequenceHandle {
    const seq = new Sequence(request, this.clock.now());
    this.waiting.push(seq);
    this.kick();
    return { abort: () => this.abort(seq) };
  }

  snapshot(): EngineStats {
    return {
      running: this.running.length,
      waiting: this.waiting.length,
      kvUsage: this.kv.usage,
      kvCapacityBlocks: this.kv.capacityBlocks,
      prefixQueriedTokens: this.kv.queriedTokens,
      prefixHitTokens: this.kv.hitTokens,
      ...this.stats,
    };
  }

  private kick(): void {
    if (this.stepping) return;
    this.stepping = true;
    const start = Math.max(this.clock.now(), this.nextStepAtMs);
    this.clock.at(start, () => this.step(start));
  }

  private abort(seq: Sequence): void {
    if (seq.done) return;
    seq.done = true;
    const w = this.waiting.indexOf(seq);
    if (w >= 0) this.waiting.splice(w, 1);
    const r = this.running.indexOf(seq);
    if (r >= 0) {
      this.running.splice(r, 1);
      this.kv.release(seq.held, seq.privateBlocks);
    }
    seq.request.onFinish(this.timing(seq, this.clock.now(), true));
  }

  private timing(seq: Sequence, finishMs: number, aborted: boolean): SequenceTiming {
    return {
      arrivalMs: seq.arrivalMs,
      firstScheduledMs: seq.firstScheduledMs,
      firstTokenMs: seq.firstTokenMs,
      finishMs,
      cachedPromptTokens: seq.cachedPromptTokens,
      preemptions: seq.preemptions,
      generated: seq.generated,
      aborted,
    };
  }

  private preempt(seq: Sequence): void {
    const r = this.running.indexOf(seq);
    this.running.splice(r, 1);
    this.kv.release(seq.held, seq.privateBlocks);
    seq.held = [];
    seq.privateBlocks = 0;
    seq.phase = 'waiting';
    seq.computed = 0;
    seq.preemptions++;
    this.stats.preemptions++;
    this.waiting.unshift(seq);
  }

  private applyCapacity(): void {
    const target = Math.max(1, Math.floor(this.config.numBlocks * this.capacityFraction()));
    if (target !== this.kv.capacityBlocks) this.kv.setCapacity(target);
    while (this.kv.usedBlocks > this.kv.capacityBlocks && this.running.length > 0) {
      this.preempt(this.running[this.running.length - 1]);
    }
  }

  private step(startMs: number): void {
    this.applyCapacity();
    let budget = this.config.maxNumBatchedTokens;
    const bs = this.config.blockSize;

    // 1. Decode slots, preempting the newest sequence when the cache is full.
    const decoding: Sequence[] = [];
    for (let i = 0; i < this.running.length; i++) {
      const seq = this.running[i];
      if (seq.phase !== 'decode') continue;
      if (seq.computed % bs === 0) {
        let ok = this.kv.grow();
        while (!ok) {
          const victim = this.running[this.running.length - 1];
          this.preempt(victim);
          if (victim === seq) break;
          ok = this.kv.grow();
        }
        if (!ok) break;
        seq.privateBlocks++;
      }
      decoding.push(seq);
      budget--;
    }

    // 2. Prefill chunks for sequences admitted earlier.
    let prefillTokens = 0;
    const prefilling: Sequence[] = [];
    for (const seq of this.running) {
      if (seq.phase !== 'prefill' || budget <= 0) continue;
      seq.chunk = Math.min(seq.prefillTarget - seq.computed, budget);
      budget -= seq.chunk;
      prefillTokens += seq.chunk;
      prefilling.push(seq);
    }

    // 3. Admission, FCFS; a sequence whose blocks do not fit waits (head-of-line).
    while (this.waiting.length > 0 && this.running.length < this.config.maxNumSeqs && budget > 0) {
      const seq = this.waiting[0];
      const ids = seq.contextIds();
      const hashes = this.kv.blockHashes(ids);
      const firstAdmission = !seq.admitted;
      const grant = this.kv.allocate(hashes, ids.length, true);
      if (grant === null) {
        // Nothing runs and it still does not fit (the cache shrank below it): refuse it rather
        // than block the queue forever.
        if (this.running.length === 0 && ids.length > this.kv.capacityBlocks * bs) {
          this.abort(seq);
          continue;
        }
        break;
      }
      this.waiting.shift();
      seq.held = grant.held;
      seq.privateBlocks = grant.privateBlocks;
      seq.computed = grant.cachedTokens;
      seq.prefillTarget = ids.length;
      seq.phase = 'prefill';
      if (firstAdmission) {
        seq.admitted = true;
        seq.cachedPromptTokens = grant.cachedTokens;
        seq.firstScheduledMs = startMs;
        this.stats.promptTokens += ids.length;
      }
      this.running.push(seq);
      seq.chunk = Math.min(seq.prefillTarget - seq.computed, budget);
      budget -= seq.chunk;
      prefillTokens += seq.chunk;
      prefilling.push(seq);
    }

    if (decoding.length === 0 && prefilling.length === 0) {
      this.stepping = false;
      return;
    }

    let contextTokens = 0;
    for (const seq of this.running) contextTokens += seq.computed;
    const e = this.config;
    const durationMs =
      e.stepBaseMs +
      e.decodePerSeqMs * decoding.length +
      e.prefillPerTokenMs * prefillTokens +
      (e.attentionPerKTokenMs * contextTokens) / 1000 +
      this.extraStepMs();
    const endMs = startMs + durationMs;
    this.nextStepAtMs = endMs;
    this.stats.steps++;
    this.stats.busyMs += durationMs;
    this.stats.lastStepTokens = decoding.length + prefillTokens;
    this.stats.lastStepDecodeSeqs = decoding.length;
    for (const observer of this.observers)
      observer({ tokens: decoding.length + prefillTokens, decodeSeqs: decoding.length, durationMs });
    this.clock.at(endMs, () => this.finishStep(endMs, decoding, prefilling));
  }

  private finishStep(endMs: number, decoding: Sequence[], prefilling: Sequence[]): void {
    const sampled: Sequence[] = [];
    for (const seq of decoding) {
      if (seq.done || seq.phase !== 'decode') continue;
      seq.computed++;
      sampled.push(seq);
    }
    for (const seq of prefilling) {
      if (seq.done || seq.phase !== 'prefill') continue;
      seq.computed += seq.chunk;
      if (seq.computed >= seq.prefillTarget) {
        seq.phase = 'decode';
        sampled.push(seq);
      }
    }
    for (const seq of sampled) {
      const index = seq.generated++;
      this.stats.generationTokens++;
      if (seq.firstTokenMs === null) seq.firstTokenMs = endMs;
      seq.request.onToken(index, endMs);
      if (seq.generated >= seq.request.outputTokens && !seq.done) {
        seq.done = true;
        const r = this.running.indexOf(seq);
        if (r >= 0) this.running.splice(r, 1);
        this.kv.release(seq.held, seq.privateBlocks);
        seq.request.onFinish(this.timing(seq, endMs, false));
      }
    }
    this.step(Math.max(endMs, this.clock.now()));
  }
}
