import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { failedCall, type HttpResponse, type RequestOptions, timedOut } from '@ferry/http';
import { Ip, type IpBackend, NetError } from '@ferry/net';
import { FERRY_API_HEADER } from '@ferry/shared-types/api/version';
import { interfaceRecordOf } from '@ferry/shared-types/testing/records';
import { afterAll, expect, test } from 'vitest';
import type { ShimConf } from '../config';
import { DaemonClient } from '../daemon-client';
import { openLog } from '../log';
import type { Runtime } from '../runtime/runtime';
import { cmdDel } from './del';

// A DEL that turns to the queue must never reach the node's own (/var/lib/ferry/delete-queue).
const ownQueue = mkdtempSync(join(tmpdir(), 'ferry-del-queue-'));
afterAll(() => rmSync(ownQueue, { recursive: true, force: true }));

// The DEL's conversation with ferryd, against a ferryd that answers from a table and a kernel whose
// deletes can fail: the paths the real round trips (test/e2e/del-round-trips.test.ts) cannot provoke.
function run(
  answer: (o: RequestOptions) => HttpResponse,
  failDeletes = 0,
  confOf: Partial<ShimConf> = {},
  deleteMs = 0,
) {
  const asked: string[] = [];
  const deleted: string[] = [];
  let toFail = failDeletes;
  const kernel: IpBackend = {
    apply: async () => [],
    applyEach: async () => [],
    show: async () => [],
    routeTo: async () => [],
    deleteLink: async (_ns, name) => {
      deleted.push(name);
      await new Promise((r) => setTimeout(r, deleteMs));
      if (toFail-- > 0) throw new NetError('failed', `delete link ${name}`, 'Device or resource busy');
    },
  };
  const runtime: Runtime = {
    run: async () => ({ exitCode: 0, stdout: '', stderr: '' }),
    sha256Hex: (text) => createHash('sha256').update(text).digest('hex'),
    request: (o) => {
      asked.push(`${o.method} ${o.path}`);
      return { answer: async () => answer(o) };
    },
  };
  const log = openLog('/dev/null', 'silent');
  const daemon = new DaemonClient(runtime, '/run/ferry/ferryd.sock', { connectMs: 100, requestMs: 100 }, log);
  const deps = { daemon, ip: new Ip(kernel), log, addWaitMs: 100, delWaitMs: 100, runtime };
  const args = {
    command: 'DEL' as const,
    containerId: 'c1',
    netns: '',
    ifName: 'eth0',
    args: { ignoreUnknown: false },
    path: '/opt/cni/bin',
  };
  const conf = { cniVersion: '1.0.0', name: 'ferry', type: 'ferry-cni', deleteQueue: ownQueue, ...confOf } as ShimConf;
  return { done: cmdDel(args, conf, deps), asked, deleted };
}

const json = (status: number, body: unknown): HttpResponse => ({
  status,
  headers: new Map([[FERRY_API_HEADER, '1']]),
  body: JSON.stringify(body),
});

const infraRecord = (hostVethName: string) => interfaceRecordOf({ netns: '', hostVethName });

test('the host veth will not go: the record is fetched, the veth deleted again by it, then released', async () => {
  const r = run((o) => {
    if (o.method === 'GET') {
      const name = /fry[0-9a-f]{12}/.exec(r.deleted[0] ?? '')?.[0] ?? '';
      return json(200, { containerId: 'c1', interfaces: [infraRecord(name)] });
    }
    return json(200, { released: [] });
  }, 1);
  await expect(r.done).resolves.toBeUndefined();
  expect(r.deleted).toEqual([expect.stringMatching(/^fry[0-9a-f]{12}$/), r.deleted[0]]);
  expect(r.asked).toEqual(['GET /v1/endpoints/c1', 'DELETE /v1/endpoints/c1?network=ferry&ifName=eth0']);
});

test('the host veth will not go, twice: the DEL fails before anything is released', async () => {
  const r = run((o) => {
    const name = /fry[0-9a-f]{12}/.exec(r.deleted[0] ?? '')?.[0] ?? '';
    return o.method === 'GET'
      ? json(200, { containerId: 'c1', interfaces: [infraRecord(name)] })
      : json(200, { released: [] });
  }, 2);
  await expect(r.done).rejects.toMatchObject({ kind: 'failed', message: expect.stringContaining('busy') });
  expect(r.asked).toEqual(['GET /v1/endpoints/c1']);
});

test('any other refusal of the release is the DEL error', async () => {
  const r = run(() => json(400, { code: 7, msg: 'invalid request querystring: ifName: too long' }));
  await expect(r.done).rejects.toMatchObject({ code: 7, message: 'invalid request querystring: ifName: too long' });
  expect(r.asked).toHaveLength(1);
});

test('ferryd ready under the queue lock, then silent: the DEL is queued after all, not failed back', async () => {
  let releases = 0;
  const r = run((o) => {
    if (o.path === '/readyz') return json(200, { ready: true, phase: 'ready' });
    // Not running at first (the DEL turns to the queue), then running but too busy to answer.
    if (releases++ === 0) throw failedCall(Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }));
    throw timedOut('answer', 100);
  });
  await expect(r.done).resolves.toBeUndefined();
  expect(r.asked.filter((a) => a.startsWith('GET /readyz'))).toHaveLength(1);
  expect(r.asked.filter((a) => a.startsWith('DELETE'))).not.toHaveLength(0);
  expect(readdirSync(ownQueue).filter((f) => f !== 'lock')).toHaveLength(1);
});

test("a slow host-veth delete does not eat into the wait for ferryd's answer", async () => {
  // delWaitMs is 100: a delete of 150 ms used to leave the release 1 ms to be answered in.
  const r = run(
    (o) => {
      if (o.deadlineMs < 50) throw timedOut('answer', o.deadlineMs);
      return json(200, { released: [] });
    },
    0,
    {},
    150,
  );
  await expect(r.done).resolves.toBeUndefined();
  expect(r.asked).toEqual(['DELETE /v1/endpoints/c1?network=ferry&ifName=eth0&hostVethDeleted=true']);
});
