/**
 * Adds `value` to the group of `key` (made on first use). Grouping by copying the group for each
 * value (`map.set(k, [...(map.get(k) ?? []), v])`) costs the square of a group's size: 13.7 s for
 * a run's 60,000 detector signals of one detector.
 */
export function pushTo<K, V>(groups: Map<K, V[]>, key: K, value: V): void {
  const group = groups.get(key);
  if (group) group.push(value);
  else groups.set(key, [value]);
}
