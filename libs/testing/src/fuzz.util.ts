import fc from 'fast-check';

/** Cases per parser in the hardening property tests (issue 14: at least 10,000 each). */
export const FUZZ_RUNS = 10_000;

export interface FuzzReport {
  readonly cases: number;
  /** Cases the parser refused with its own classified error. */
  readonly refused: number;
  /** Slowest single case, ms. */
  readonly slowestMs: number;
  /** Heap growth over the whole run, MiB (after the last case; no forced GC). */
  readonly heapGrowthMib: number;
}

export interface FuzzOptions<T> {
  /** Fixed, so a failure reproduces: fast-check prints the counterexample with this seed. */
  readonly seed: number;
  readonly numRuns?: number;
  /** The parser's classified refusal; anything else thrown fails the property. */
  readonly refusal: (error: unknown) => boolean;
  /** Checked on every accepted result, e.g. output bounded by the input's size. */
  readonly check?: (input: T, output: unknown) => void;
  /** One case slower than this fails the property (a hang, or exponential work); generous, so a busy CI host does not trip it. */
  readonly maxCaseMs?: number;
}

/**
 * Runs `parse` on `numRuns` generated inputs: it must return or throw its classified refusal,
 * never anything else (a TypeError, a RangeError from a stack overflow, a plain Error from a
 * library), and no case may take longer than `maxCaseMs`.
 */
export function fuzzParser<T>(
  arbitrary: fc.Arbitrary<T>,
  parse: (input: T) => unknown,
  options: FuzzOptions<T>,
): FuzzReport {
  let refused = 0;
  let slowestMs = 0;
  let cases = 0;
  const maxCaseMs = options.maxCaseMs ?? 2000;
  const heapBefore = process.memoryUsage().heapUsed;
  fc.assert(
    fc.property(arbitrary, (input) => {
      cases++;
      const started = performance.now();
      let output: unknown;
      try {
        output = parse(input);
      } catch (error) {
        if (!options.refusal(error)) throw error;
        refused++;
      }
      const took = performance.now() - started;
      slowestMs = Math.max(slowestMs, took);
      if (took > maxCaseMs) throw new Error(`one case took ${took.toFixed(0)} ms (limit ${maxCaseMs} ms)`);
      if (output !== undefined) options.check?.(input, output);
    }),
    { numRuns: options.numRuns ?? FUZZ_RUNS, seed: options.seed, endOnFailure: true },
  );
  return {
    cases,
    refused,
    slowestMs,
    heapGrowthMib: (process.memoryUsage().heapUsed - heapBefore) / 1048576,
  };
}

/**
 * Text built from `fragments` (the format's own tokens, which reach deeper than random bytes),
 * random characters and splices into `seeds` (real captures), so cases are both near-valid and
 * hostile.
 */
export function textFrom(
  fragments: readonly string[],
  seeds: readonly string[] = [],
  maxLength = 40,
): fc.Arbitrary<string> {
  const piece = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...fragments) },
    { weight: 2, arbitrary: fc.string({ maxLength: 6 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 4 }) },
  );
  const built = fc.array(piece, { maxLength }).map((parts) => parts.join(''));
  if (seeds.length === 0) return built;
  const spliced = fc
    .tuple(
      fc.constantFrom(...seeds),
      fc.array(fc.tuple(fc.nat(), fc.nat({ max: 40 }), built), { minLength: 1, maxLength: 3 }),
    )
    .map(([seed, edits]) =>
      edits.reduce((text, [at, cut, insert]) => {
        const i = at % (text.length + 1);
        return text.slice(0, i) + insert + text.slice(i + cut);
      }, seed),
    );
  return fc.oneof({ weight: 4, arbitrary: built }, { weight: 1, arbitrary: spliced });
}
