import { pushTo } from './group.util';

describe(pushTo.name, () => {
  it('groups values by key in the order they came, a group made on its first value', () => {
    const groups = new Map<string, number[]>();
    for (const [k, v] of [
      ['a', 1],
      ['b', 2],
      ['a', 3],
    ] as const)
      pushTo(groups, k, v);
    expect([...groups]).toEqual([
      ['a', [1, 3]],
      ['b', [2]],
    ]);
  });
});
