import { expect, test } from 'vitest';
import { addresses, linkNames, ping } from '../fixtures/kernel';
import { inNetns, netnsNames, useNetns, useVeth } from '../fixtures/netns';
import { PREFIX } from '../fixtures/paths';
import { manualScope } from '../fixtures/scope';

// Other test files create ferry-t-* namespaces concurrently; compare everything else exactly.
const notOtherTests = (names: string[], ours: string[]) =>
  names.filter((n) => !n.startsWith(PREFIX) || ours.includes(n));

test('node and pod namespaces joined by a veth ping each other, and teardown leaves no namespace', async () => {
  const ours: string[] = [];
  const before = notOtherTests(await netnsNames(), ours);
  const scope = manualScope();
  try {
    const node = await useNetns(scope, 'node');
    const pod = await useNetns(scope, 'pod');
    ours.push(node.name, pod.name);
    expect(notOtherTests(await netnsNames(), ours)).toEqual([...before, node.name, pod.name].sort());
    await useVeth(node, 'n0', pod, 'p0');
    await inNetns(node, 'ip', 'addr', 'add', '192.0.2.1/24', 'dev', 'n0');
    await inNetns(pod, 'ip', 'addr', 'add', '192.0.2.2/24', 'dev', 'p0');
    expect(await linkNames(node)).toEqual(['lo', 'n0']);
    expect(await addresses(pod, 'p0')).toEqual(['192.0.2.2/24']);
    expect(await ping(pod, '192.0.2.1')).toBe(true);
    expect(await ping(node, '192.0.2.2')).toBe(true);
    expect(await ping(node, '192.0.2.3')).toBe(false);
  } finally {
    await scope.runCleanups();
  }
  expect(ours).toHaveLength(2);
  expect(notOtherTests(await netnsNames(), ours)).toEqual(before);
});
