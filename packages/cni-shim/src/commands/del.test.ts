import { createHash } from 'node:crypto';
import type { HttpResponse, RequestOptions } from '@ferry/http';
import { Ip, type IpBackend } from '@ferry/net';
import { expect, test } from 'vitest';
import type { ShimConf } from '../config';
import { DaemonClient } from '../daemon-client';
import { openLog } from '../log';
import type { Runtime } from '../runtime/runtime';
import { cmdDel } from './del';

// The DEL's conversation with ferryd, against a ferryd that answers from a table: what a real older ferryd
// says is pinned here, the real round trips run in test/e2e/del-round-trips.test.ts.
function run(answer: (o: RequestOptions) => HttpResponse) {
  const asked: string[] = [];
  const deleted: string[] = [];
  const kernel: IpBackend = {
    apply: async () => [],
    applyEach: async () => [],
    show: async () => [],
    routeTo: async () => [],
    deleteLink: async (_ns, name) => {
      deleted.push(name);
    },
  };
  const rt: Runtime = {
    run: async () => ({ exitCode: 0, stdout: '', stderr: '' }),
    sha256Hex: (text) => createHash('sha256').update(text).digest('hex'),
    request: (o) => {
      asked.push(`${o.method} ${o.path}`);
      return { answer: async () => answer(o) };
    },
  };
  const log = openLog('/dev/null', 'silent');
  const daemon = new DaemonClient(rt, '/run/ferry/ferryd.sock', { connectMs: 100, requestMs: 100 }, log);
  const deps = { daemon, ip: new Ip(kernel), log, addWaitMs: 100, delWaitMs: 100, rt };
  const args = {
    command: 'DEL' as const,
    containerId: 'c1',
    netns: '',
    ifName: 'eth0',
    args: { ignoreUnknown: false },
    path: '/opt/cni/bin',
  };
  const conf = { cniVersion: '1.0.0', name: 'ferry', type: 'ferry-cni' } as ShimConf;
  return { done: cmdDel(args, conf, deps), asked, deleted };
}

const json = (status: number, body: unknown): HttpResponse => ({ status, body: JSON.stringify(body) });

test('a ferryd that does not know hostVethDeleted (older than the shim): the record is fetched, then released', async () => {
  const r = run((o) => {
    if (o.method === 'DELETE' && o.path.includes('hostVethDeleted=')) {
      // The answer of the ferryd before the parameter existed: its strict query schema refuses it.
      return json(400, { code: 7, msg: 'invalid request querystring: (root): unknown field "hostVethDeleted"' });
    }
    if (o.method === 'GET') return json(404, { code: 104, msg: 'no endpoint for container c1' });
    return json(200, { released: [] });
  });
  await expect(r.done).resolves.toBeUndefined();
  expect(r.deleted).toHaveLength(1);
  expect(r.asked).toEqual([
    expect.stringMatching(/^DELETE \/v1\/endpoints\/c1\?.*hostVethDeleted=fry[0-9a-f]{12}$/),
    'GET /v1/endpoints/c1',
    'DELETE /v1/endpoints/c1?network=ferry&ifName=eth0',
  ]);
});

test('any other refusal of the release is the DEL error', async () => {
  const r = run(() => json(400, { code: 7, msg: 'invalid request querystring: ifName: too long' }));
  await expect(r.done).rejects.toMatchObject({ code: 7, message: 'invalid request querystring: ifName: too long' });
  expect(r.asked).toHaveLength(1);
});
