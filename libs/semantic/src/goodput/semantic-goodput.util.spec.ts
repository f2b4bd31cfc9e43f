import { computeGoodput } from './semantic-goodput.util';

describe(computeGoodput.name, () => {
  it('counts semantic goodput only among requests that met their latency SLOs', () => {
    const sut = computeGoodput(
      [
        { requestId: '1', latencySloMet: true, semanticChecks: { 'no-hallucination': true } },
        {
          requestId: '2',
          latencySloMet: true,
          semanticChecks: { 'no-hallucination': false, 'schema-ok': true },
        },
        { requestId: '3', latencySloMet: false, semanticChecks: { 'no-hallucination': false } },
        { requestId: '4', latencySloMet: true, semanticChecks: {} },
      ],
      2,
    );
    expect(sut).toEqual({
      requests: 4,
      goodRequests: 3,
      semanticallyGoodRequests: 2,
      goodput: 0.75,
      semanticGoodput: 0.5,
      goodputPerSecond: 1.5,
      semanticGoodputPerSecond: 1,
      checkFailures: { 'no-hallucination': 1 },
    });
  });

  it('gives null ratios for an empty run', () => {
    expect(computeGoodput([])).toMatchObject({
      requests: 0,
      goodput: null,
      semanticGoodput: null,
      goodputPerSecond: null,
    });
  });
});
