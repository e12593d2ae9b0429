/**
 * ADD's commit through the commit journal: one ferryd round trip per ADD, with the guarantees the PUT
 * commit gave. The real shim writes the entry, the real ferryd promotes it before it reads or changes the
 * attachment (a repeated ADD, CHECK, DEL, its own start-up), and a release leaves no entry behind.
 */
import { copyFileSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { useNodeWithDevices } from '../fixtures/device';
import { commitJournalOf, type Ferryd } from '../fixtures/ferryd';
import { linkNames, links } from '../fixtures/kernel';
import { useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { pendingFiles, queueEntryName } from '../fixtures/queue';
import { runShim } from '../fixtures/shim';
import { waitFor } from '../fixtures/wait';

interface StateRecord {
  ifName: string;
  state: string;
  generation: number;
  mac?: string;
  containerIfIndex?: number;
}

/** The shim's log messages for one container and command, in order. */
function shimMessages(ferryd: Ferryd, containerId: string, cmd: string): string[] {
  return readFileSync(join(ferryd.dir, 'cni.log'), 'utf8')
    .split('\n')
    .filter((l) => l.includes(containerId) && l.includes(`"cmd":"${cmd}"`))
    .map((l) => (JSON.parse(l) as { msg: string }).msg);
}

async function recordsOf(ferryd: Ferryd, containerId: string): Promise<StateRecord[]> {
  const r = await ferryd.request('GET', `/v1/endpoints/${containerId}`);
  expect(r.status, r.body).toBe(200);
  return (r.json as { interfaces: StateRecord[] }).interfaces;
}

describe('commit journal', () => {
  test('ADD asks ferryd once; a repeated ADD gets 105, CHECK sees the commit, DEL leaves no entry', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    const journal = commitJournalOf(ferryd);
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };

    const add = await runShim(node, 'ADD', call);
    expect(add.exitCode, add.stdout).toBe(0);
    const msgs = shimMessages(ferryd, call.containerId, 'ADD');
    expect(msgs.filter((m) => m === 'asking ferryd')).toHaveLength(1);
    expect(msgs).toContain('committed through the journal');
    // Nothing has asked ferryd since: the entry waits, named by the attachment key.
    expect(pendingFiles(journal)).toEqual([queueEntryName('ferry', call.containerId, 'eth0')]);

    // The allocation promotes it first, so this is an ADD of a committed attachment, as after a PUT.
    const again = await runShim(node, 'ADD', call);
    expect(again.json).toMatchObject({ code: 105 });
    expect(pendingFiles(journal)).toEqual([]);

    const [rec] = await recordsOf(ferryd, call.containerId);
    expect(rec).toMatchObject({ state: 'committed', mac: expect.any(String), containerIfIndex: expect.any(Number) });
    const check = await runShim(node, 'CHECK', { ...call, conf: netConf(ferryd, { prevResult: add.json }) });
    expect(check.exitCode, check.stdout).toBe(0);

    const del = await runShim(node, 'DEL', call);
    expect(del.exitCode, del.stdout).toBe(0);
    expect(pendingFiles(journal)).toEqual([]);
    expect(await ferryd.assignedAddresses()).toEqual([]);
    expect(await linkNames(pod)).toEqual(['lo']);
  });

  test('DEL right after ADD releases the attachment and its entry', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
    expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
    expect(pendingFiles(commitJournalOf(ferryd))).toHaveLength(1);
    const del = await runShim(node, 'DEL', call);
    expect(del.exitCode, del.stdout).toBe(0);
    expect(pendingFiles(commitJournalOf(ferryd))).toEqual([]);
    expect(await ferryd.assignedAddresses()).toEqual([]);
    expect((await ferryd.request('GET', `/v1/endpoints/${call.containerId}`)).status).toBe(404);
  });

  test('ferryd killed (-9) between ADD and CHECK promotes the entry at start-up; DEL releases it', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
    const add = await runShim(node, 'ADD', call);
    expect(add.exitCode, add.stdout).toBe(0);
    await ferryd.kill('SIGKILL');
    await ferryd.start();
    // Ready means the start-up pass ran: the entry is a commit now, before any request asked.
    expect(pendingFiles(commitJournalOf(ferryd))).toEqual([]);
    const check = await runShim(node, 'CHECK', { ...call, conf: netConf(ferryd, { prevResult: add.json }) });
    expect(check.exitCode, check.stdout).toBe(0);
    expect((await runShim(node, 'DEL', call)).exitCode).toBe(0);
    expect(await ferryd.assignedAddresses()).toEqual([]);
  });

  test('an entry of an older generation is discarded, not promoted', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    const journal = commitJournalOf(ferryd);
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
    const name = queueEntryName('ferry', call.containerId, 'eth0');
    const old = join(ferryd.dir, 'old-entry.json');

    expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
    copyFileSync(join(journal, name), old);
    expect((await runShim(node, 'DEL', call)).exitCode).toBe(0);
    expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
    // The first ADD's entry comes back in place of the second's (a shim that wrote late, say).
    copyFileSync(old, join(journal, name));

    const [rec] = await recordsOf(ferryd, call.containerId);
    expect(rec?.state).toBe('allocated');
    expect(pendingFiles(journal)).toEqual([]);
    // ferryd's log lines reach the file asynchronously (pino): wait for the line, then look at it.
    const discardedLines = () =>
      ferryd
        .log()
        .split('\n')
        .filter((l) => l.includes('commit journal entry discarded'));
    await waitFor('the discard logged', async () => discardedLines().length > 0);
    const discarded = discardedLines();
    expect(discarded).toHaveLength(1);
    expect(discarded[0]).toMatch(/generation \d+ is stale/);
    expect((await runShim(node, 'DEL', call)).exitCode).toBe(0);
    expect(await ferryd.assignedAddresses()).toEqual([]);
  });

  test('a delegated NIC is recorded from the journal with its pod-side ifindex and MAC', async (t) => {
    // A long reconcile period: nothing but the test's own requests settles the journal.
    const device = { name: 'eth1', mac: '02:fe:00:00:00:11' };
    const { node, ferryd } = await useNodeWithDevices(t, [device], { reconcile: { intervalSec: 3600 } });
    const pod = await useNetns(t, 'pod');
    const conf = netConf(ferryd, { delegatedNICs: { group: 'frontend', count: 1 } });
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf };
    const add = await runShim(node, 'ADD', call);
    expect(add.exitCode, add.stdout).toBe(0);
    expect(shimMessages(ferryd, call.containerId, 'ADD').filter((m) => m === 'asking ferryd')).toHaveLength(1);
    expect(pendingFiles(commitJournalOf(ferryd))).toHaveLength(1);

    const inPod = await links(pod);
    const recs = await recordsOf(ferryd, call.containerId);
    expect(recs.map((r) => r.ifName).sort()).toEqual(['eth0', 'net1']);
    for (const r of recs) {
      const l = inPod.find((x) => x.ifname === r.ifName);
      expect(l, r.ifName).toBeDefined();
      expect(r).toMatchObject({ state: 'committed', mac: l?.address, containerIfIndex: l?.ifindex });
    }
    expect((await runShim(node, 'DEL', call)).exitCode).toBe(0);
    expect(await ferryd.assignedAddresses()).toEqual([]);
  });

  test('a conflist that names only the delete queue finds the journal next to it, as ferryd does', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    // undefined: the key is left out of the JSON the shim reads.
    const conf = netConf(ferryd, { commitJournal: undefined, deleteQueue: ferryd.deleteQueue });
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf };
    expect((await runShim(node, 'ADD', call)).exitCode).toBe(0);
    expect(shimMessages(ferryd, call.containerId, 'ADD')).toContain('committed through the journal');
    expect(pendingFiles(commitJournalOf(ferryd))).toHaveLength(1);
    expect((await runShim(node, 'DEL', call)).exitCode).toBe(0);
  });

  test('where the journal cannot be written (its directory is gone) ADD commits over the socket', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    rmSync(commitJournalOf(ferryd), { recursive: true });
    const call = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
    const add = await runShim(node, 'ADD', call);
    expect(add.exitCode, add.stdout).toBe(0);
    const msgs = shimMessages(ferryd, call.containerId, 'ADD');
    expect(msgs.filter((m) => m === 'asking ferryd')).toHaveLength(2);
    expect(msgs).toContain('commit journal not written; committing over the socket');
    expect(existsSync(commitJournalOf(ferryd))).toBe(false);
    const [rec] = await recordsOf(ferryd, call.containerId);
    expect(rec?.state).toBe('committed');
    expect((await runShim(node, 'DEL', call)).exitCode).toBe(0);
  });
});
