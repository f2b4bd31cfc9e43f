/**
 * @jest-environment ./libs/semantic/src/testing/ort.jest-environment.js
 */
import { readFileSync } from 'node:fs';
import { anomalyCorpus } from './anomaly-corpus';
import { buildAnomalyModel } from './anomaly-head';
import { isTruncatedJson, matchAnomalyRules, type Fragment } from './anomaly.rules';
import { BUNDLED_ANOMALY_MODEL, LlmMonitor } from './llm.monitor';
import { WindowedLruCache } from './windowed-lru.cache';
import { intentHeadToOnnx, trainNearestCentroidHead } from '../onnx/intent-classifier';

const response = (text: string): Fragment => ({ source: 'response', text });

describe(matchAnomalyRules.name, () => {
  it.each([
    ["I'm sorry, but I can't help with that.", 'refusal-phrase', 'refusal'],
    ['As an AI language model, I cannot give medical advice.', 'refusal-phrase', 'refusal'],
    ['{"error": {"message": "model not found", "code": 404}}', 'error-json', 'error-body'],
    ['{"object": "error", "message": "context too long"}', 'error-json', 'error-body'],
    ['Traceback (most recent call last):\n  File "x.py"', 'python-traceback', 'error-body'],
    ['torch.OutOfMemoryError: CUDA out of memory.', 'server-error-text', 'error-body'],
    ['The answer<|im_end|><|im_start|>user', 'special-token-leak', 'degenerate'],
    ['As of my knowledge cutoff, no such law existed.', 'knowledge-cutoff', 'hallucination-marker'],
    ['```json\n{"items": [1, 2, {"a": "b', 'unclosed-json', 'truncated-json'],
    ['and then and then and then and then it stopped', 'repeat-loop', 'degenerate'],
    ['broken \ufffd bytes', 'replacement-char', 'degenerate'],
  ])('flags %j (%s)', (text, rule, label) => {
    expect(matchAnomalyRules(response(text))).toEqual({ rule, label });
  });

  it.each([
    'Here is the summary you asked for: revenue grew 4 % in the quarter.',
    '{"items": [0, 0, 0, 0], "note": "a closed {brace} in a string"}',
    '[0, 0, 0, 0, 0]',
    'Sorry for the delay! The fix is merged.',
    '',
  ])('passes %j', (text) => {
    expect(matchAnomalyRules(response(text))).toBeNull();
  });

  it('knows an escaped quote does not close a JSON string', () => {
    expect(isTruncatedJson('{"a": "say \\"hi\\""}')).toBe(false);
    expect(isTruncatedJson('{"a": "say \\"hi')).toBe(true);
  });
});

describe(WindowedLruCache.name, () => {
  it('serves an entry only within its time window and evicts the least recently used', () => {
    let now = 0;
    const sut = new WindowedLruCache<number>(2, 1_000, () => now);
    sut.set('a', 1);
    sut.set('b', 2);
    expect(sut.get('a')).toBe(1); // a is now the most recent
    sut.set('c', 3); // evicts b
    expect(sut.get('b')).toBeUndefined();
    expect(sut.get('c')).toBe(3);
    now = 999;
    expect(sut.get('a')).toBe(1);
    now = 1_000; // next window: everything from the last one is gone
    expect(sut.get('a')).toBeUndefined();
    expect(sut.size).toBe(0);
    expect(sut.expired).toBe(2);
  });

  it('refuses a zero capacity or window', () => {
    expect(() => new WindowedLruCache(0, 1_000)).toThrow(/capacity/);
    expect(() => new WindowedLruCache(1, 0)).toThrow(/windowMs/);
  });
});

describe(LlmMonitor.name, () => {
  it('ships the model its training script rebuilds (npm run model:anomaly)', () => {
    const committed = readFileSync(BUNDLED_ANOMALY_MODEL);
    expect(Buffer.from(buildAnomalyModel(anomalyCorpus('train'))).equals(committed)).toBe(true);
  });

  it('catches held-out anomalies the rules miss, at held-out precision >= 0.95', async () => {
    const sut = await LlmMonitor.load(BUNDLED_ANOMALY_MODEL);
    expect(sut.state.kind).toBe('model');
    const heldOut = anomalyCorpus('held-out');
    const verdicts = await sut.assess(heldOut.map((f) => response(f.text)));
    const figures = (flagged: (i: number) => boolean) => {
      let tp = 0;
      let fp = 0;
      let positives = 0;
      heldOut.forEach((f, i) => {
        const anomalous = f.label !== 'normal';
        if (anomalous) positives++;
        if (flagged(i) && anomalous) tp++;
        else if (flagged(i)) fp++;
      });
      return { precision: round(tp / Math.max(1, tp + fp)), recall: round(tp / positives), tp, fp };
    };
    const rules = figures((i) => verdicts[i].decidedBy === 'rule');
    const both = figures((i) => verdicts[i].anomalous);
    const caughtByModelOnly = verdicts.filter(
      (v, i) => v.decidedBy === 'model' && heldOut[i].label !== 'normal',
    ).length;
    // One line, same text every run: the held-out figures at the default threshold (0.9).
    process.stdout.write(
      `llm-monitor held-out (${heldOut.length} fragments): rules P ${rules.precision} R ${rules.recall}; rules+model P ${both.precision} R ${both.recall}; model-only catches ${caughtByModelOnly}\n`,
    );
    expect(rules.recall).toBeLessThan(0.5);
    expect(caughtByModelOnly).toBeGreaterThan(100);
    expect(both.recall).toBeGreaterThan(0.7);
    expect(both.precision).toBeGreaterThanOrEqual(0.95);
    await sut.close();
  });

  it('asks the model only about the fragments the rules passed, once per fragment and window', async () => {
    let now = 0;
    const sut = await LlmMonitor.load(BUNDLED_ANOMALY_MODEL, { cacheWindowMs: 60_000, now: () => now });
    const batch = [
      response("I'm sorry, but I can't help with that."),
      response('Unfortunately that is not something I am able to assist with.'),
      response('The meeting moved to Thursday at 10.'),
    ];
    const first = await sut.assess(batch);
    expect(first.map((v) => [v.decidedBy, v.label])).toEqual([
      ['rule', 'refusal'],
      ['model', 'refusal'],
      [null, 'normal'],
    ]);
    expect(first[0].modelConfidence).toBeNull();
    expect(first[1].modelConfidence).toBeGreaterThanOrEqual(0.9);
    expect(sut.stats.modelScored).toBe(2);

    const again = await sut.assess(batch);
    expect(again.every((v) => v.cached)).toBe(true);
    expect(sut.stats.modelScored).toBe(2);
    expect(sut.stats.cacheHits).toBe(3);

    now = 60_000; // the next window re-judges
    const later = await sut.assess(batch);
    expect(later.some((v) => v.cached)).toBe(false);
    expect(sut.stats.modelScored).toBe(4);
    expect(sut.stats).toMatchObject({ fragments: 9, anomalies: 6, ruleHits: 3, modelHits: 3 });
    await sut.close();
  });

  it('keys the cache by source too: the same text as a log line is judged on its own', async () => {
    const sut = LlmMonitor.rulesOnly('test');
    await sut.assess([response('Internal Server Error')]);
    const [asError] = await sut.assess([{ source: 'error', text: 'Internal Server Error' }]);
    expect(asError.cached).toBe(false);
  });

  it('runs rules-only and says why when the model is not ONNX', async () => {
    const sut = await LlmMonitor.load(Uint8Array.from([1, 2, 3, 4]));
    expect(sut.state.kind).toBe('rules-only');
    expect(sut.state.kind === 'rules-only' && sut.state.reason).toMatch(
      /anomaly model 4 bytes failed to load/,
    );
    const verdicts = await sut.assess([
      response("I'm sorry, but I can't help with that."),
      response('Unfortunately that is not something I am able to assist with.'),
    ]);
    expect(verdicts.map((v) => v.anomalous)).toEqual([true, false]);
    expect(sut.stats.modelScored).toBe(0);
  });

  it('runs rules-only when the model breaks the input contract, and when the file is missing', async () => {
    const intent = trainNearestCentroidHead(
      [
        [1, 0],
        [0, 1],
      ],
      ['a', 'b'],
    );
    const wrongWidth = await LlmMonitor.load(intentHeadToOnnx(intent));
    expect(wrongWidth.state.kind).toBe('rules-only');
    const missing = await LlmMonitor.load('/nonexistent/anomaly.onnx');
    expect(missing.state.kind === 'rules-only' && missing.state.reason).toMatch(
      /\/nonexistent\/anomaly\.onnx/,
    );
  });
});

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
