/** What an `InFlightList` links through: two fields on the member itself, null while unlinked. */
export interface InFlightNode<T> {
  listPrev: T | null;
  listNext: T | null;
}

/**
 * The engine's in-flight requests, oldest first: a doubly linked list through the members' own
 * fields, with O(1) add and delete and a delete that unlinks both pointers.
 *
 * It replaces a `Set`, which cost the engine a fifth of its throughput once a run was older than
 * its first full GC. A `Set` that gains and loses an entry per request rehashes every few dozen
 * requests, and V8 keeps each rehashed-away table pointing at its successor. Once one of those
 * tables sat in the old generation, every scavenge kept the chain of newer tables alive, and with
 * them every request the chain still referenced: measured with `bench/load-engine/fathom-client.ts`
 * and a full GC forced at 5 s, the engine's scavenges took 480-500 ms per 2.5 s instead of ~55,
 * old space filled at ~100 MB/s (a full GC every 1.3 s) and throughput fell 21 %. A list whose
 * removed members point nowhere leaves nothing for a dead member to keep alive.
 *
 * Members may be deleted while the list is iterated (the iterator reads the next member first).
 */
export class InFlightList<T extends InFlightNode<T>> implements Iterable<T> {
  private head: T | null = null;
  private tail: T | null = null;

  add(node: T): void {
    node.listPrev = this.tail;
    node.listNext = null;
    if (this.tail !== null) this.tail.listNext = node;
    else this.head = node;
    this.tail = node;
  }

  /** Unlinks `node`; a node that is not in the list is left as it is. */
  delete(node: T): void {
    if (node.listPrev !== null) node.listPrev.listNext = node.listNext;
    else if (this.head === node) this.head = node.listNext;
    else return;
    if (node.listNext !== null) node.listNext.listPrev = node.listPrev;
    else this.tail = node.listPrev;
    node.listPrev = null;
    node.listNext = null;
  }

  *[Symbol.iterator](): Iterator<T> {
    for (let node = this.head; node !== null;) {
      const next = node.listNext;
      yield node;
      node = next;
    }
  }
}
