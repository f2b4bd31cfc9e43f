import fc from 'fast-check';
import { InFlightList, type InFlightNode } from './in-flight.list';

class Node implements InFlightNode<Node> {
  listPrev: Node | null = null;
  listNext: Node | null = null;
  constructor(readonly id: number) {}
}

const ids = (list: InFlightList<Node>) => [...list].map((n) => n.id);

describe(InFlightList.name, () => {
  it('iterates members oldest first, as a Set of the same adds and deletes does', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.nat(15)), { maxLength: 200 }), (ops) => {
        const nodes = Array.from({ length: 16 }, (_, i) => new Node(i));
        const list = new InFlightList<Node>();
        const reference = new Set<Node>();
        for (const [add, i] of ops) {
          const node = nodes[i];
          if (add && !reference.has(node)) {
            list.add(node);
            reference.add(node);
          } else if (!add) {
            list.delete(node);
            reference.delete(node);
          }
          expect(ids(list)).toEqual([...reference].map((n) => n.id));
        }
      }),
    );
  });

  it('leaves a deleted member pointing nowhere, so a dead member keeps nothing alive', () => {
    const [a, b, c] = [new Node(1), new Node(2), new Node(3)];
    const list = new InFlightList<Node>();
    [a, b, c].forEach((n) => list.add(n));
    list.delete(b);
    expect([b.listPrev, b.listNext]).toEqual([null, null]);
    expect(ids(list)).toEqual([1, 3]);
    list.delete(a);
    list.delete(c);
    expect([a.listPrev, a.listNext, c.listPrev, c.listNext]).toEqual([null, null, null, null]);
    expect(ids(list)).toEqual([]);
  });

  it('ignores a delete of a node that is not a member', () => {
    const list = new InFlightList<Node>();
    const member = new Node(1);
    list.add(member);
    list.delete(new Node(2));
    list.delete(member);
    list.delete(member);
    expect(ids(list)).toEqual([]);
    list.add(member);
    expect(ids(list)).toEqual([1]);
  });

  it('lets the member being visited, or any other, be deleted during iteration', () => {
    const nodes = [1, 2, 3, 4].map((i) => new Node(i));
    const list = new InFlightList<Node>();
    nodes.forEach((n) => list.add(n));
    const seen: number[] = [];
    for (const node of list) {
      seen.push(node.id);
      list.delete(node);
      if (node.id === 2) list.delete(nodes[3]);
    }
    expect(seen).toEqual([1, 2, 3]);
    expect(ids(list)).toEqual([]);
  });
});
