/**
 * Counts under a fixed sequence of label values, one tree level per label. A hot path walks
 * `child(value)` once per label: after the first time a combination is seen, counting is a few
 * Map lookups and an increment, with nothing allocated. prom-client sees the counts only at
 * scrape time (a collected counter reads `leaves()`).
 */
export class CountTree {
  value = 0;
  private readonly children = new Map<string, CountTree>();

  child(value: string): CountTree {
    let found = this.children.get(value);
    if (!found) this.children.set(value, (found = new CountTree()));
    return found;
  }

  /** Every leaf `depth` levels down, with the label values on its path. */
  *leaves(depth: number, path: string[] = []): Generator<[string[], number]> {
    if (depth === 0) {
      yield [path, this.value];
      return;
    }
    for (const [value, child] of this.children) yield* child.leaves(depth - 1, [...path, value]);
  }
}
