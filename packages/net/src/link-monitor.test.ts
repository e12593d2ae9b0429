import { expect, test } from 'vitest';
import { LinkMonitor, type LinkMonitorEvent, parseLinkEvent } from './link-monitor';
import { SELF } from './netns';
import { nodeSpawner } from './node-runner';
import type { Spawner } from './run';

// As iproute2 6.1 prints them (`ip -o monitor link`, captured in a test namespace).
const CHANGED =
  '2: x1@if2: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 qdisc noqueue state DOWN group default \\    link/ether 02:AA:00:00:00:01 brd ff:ff:ff:ff:ff:ff link-netnsid 0';
const DELETED =
  'Deleted 2: x1@NONE: <BROADCAST,MULTICAST> mtu 1500 qdisc noop state DOWN group default \\    link/ether 02:aa:00:00:00:01 brd ff:ff:ff:ff:ff:ff';

test('a monitor line is a typed event: kind, index, the name without its peer, the MAC in lower case, carrier', () => {
  const x1 = { ifindex: 2, ifname: 'x1', mac: '02:aa:00:00:00:01', hasCarrier: false };
  expect(parseLinkEvent(CHANGED)).toEqual({ kind: 'changed', ...x1 });
  expect(parseLinkEvent(DELETED)).toEqual({ kind: 'deleted', ...x1 });
  expect(
    parseLinkEvent(CHANGED.replace('NO-CARRIER,BROADCAST,MULTICAST,UP', 'BROADCAST,MULTICAST,UP,LOWER_UP')),
  ).toEqual({
    kind: 'changed',
    ...x1,
    hasCarrier: true,
  });
  expect(
    parseLinkEvent('5: wg0: <POINTOPOINT,NOARP,UP,LOWER_UP> mtu 1420 qdisc noqueue state UNKNOWN \\    link/none'),
  ).toEqual({ kind: 'changed', ifindex: 5, ifname: 'wg0', hasCarrier: true });
  expect(parseLinkEvent('')).toBeUndefined();
  expect(parseLinkEvent('nsid 3 (iproute2 netns name: p1)')).toBeUndefined();
});

/** A Spawner that runs `script` in place of `ip -o monitor link` (a real process, its lines real output). */
const standIn =
  (script: string, argvs: string[][]): Spawner =>
  (argv, onLine) => {
    argvs.push([...argv]);
    return nodeSpawner(['sh', '-c', script], onLine);
  };

test('events go to the listener; a monitor that exits is started again, later each time; stop() ends it for good', async () => {
  const argvs: string[][] = [];
  const monitor = new LinkMonitor({
    netns: SELF,
    spawn: standIn(`echo '${DELETED}'; echo 'not an event'; echo boom >&2; exit 3`, argvs),
    restartMs: 20,
  });
  const events: LinkMonitorEvent[] = [];
  monitor.onEvent((e) => events.push(e));
  monitor.start();
  await expect
    .poll(() => events.filter((e) => e.type === 'exited').length, { timeout: 5000 })
    .toBeGreaterThanOrEqual(3);
  await monitor.stop();
  const exits = events.flatMap((e) => (e.type === 'exited' ? [e] : []));
  expect(exits[0]?.exit).toEqual({ exitCode: 3, signal: null, stderr: 'boom' });
  expect(exits.slice(0, 3).map((e) => e.restartInMs)).toEqual([20, 40, 80]);
  expect(events.filter((e) => e.type === 'link').length).toBeGreaterThanOrEqual(3);
  expect(events.find((e) => e.type === 'link')).toEqual({ type: 'link', link: parseLinkEvent(DELETED) });
  expect(argvs[0]).toEqual(['ip', '-o', 'monitor', 'link']);
  // Every start is announced before its events, so a listener can catch up on what it missed.
  expect(events[0]?.type).toBe('started');
  const spawned = argvs.length;
  await new Promise((r) => setTimeout(r, 200));
  expect(argvs.length).toBe(spawned);
});

test('stop() ends a running monitor and resolves once its process is gone', async () => {
  const monitor = new LinkMonitor({ netns: SELF, spawn: standIn('exec sleep 60', []) });
  const events: LinkMonitorEvent[] = [];
  monitor.onEvent((e) => events.push(e));
  monitor.start();
  const pid = monitor.pid;
  expect(pid).toBeGreaterThan(0);
  await monitor.stop();
  expect(() => process.kill(pid as number, 0)).toThrow();
  expect(events.map((e) => e.type)).toEqual(['started']);
});
