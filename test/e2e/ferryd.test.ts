/**
 * ferryd as a process: a real socket, a real database file, killed and restarted for real.
 */
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Method } from '@ferry/http';
import Database from 'better-sqlite3';
import { execa } from 'execa';
import { describe, expect, test } from 'vitest';
import { FAST_PASSES, useFerryd } from '../fixtures/ferryd';
import { useNode, useNodeNetns } from '../fixtures/node';
import { DIST_BIN } from '../fixtures/paths';
import { useTmpDir } from '../fixtures/tmp';
import { waitFor } from '../fixtures/wait';

const attach = (containerId: string, network = 'ferry') => ({
  network,
  containerId,
  ifName: 'eth0',
  // A netns that exists, so doctor's node checks see live pods.
  netns: '/proc/self/ns/net',
});

interface AllocationBody {
  generation: number;
  nics: { addresses: { address: string }[] }[];
}
/** Rounds of kill -9 under load (each restarts ferryd once). */
const KILL_ROUNDS = 20;

const addressesOf = (body: unknown) => (body as AllocationBody).nics.flatMap((n) => n.addresses.map((a) => a.address));

describe('ferryd over its unix socket', () => {
  test('allocate → commit → get → release → GC round trips', async (t) => {
    const { ferryd } = await useNode(t);
    const sock = statSync(ferryd.socket);
    expect(sock.mode & 0o777).toBe(0o600);
    expect(statSync(dirname(ferryd.socket)).mode & 0o777).toBe(0o700);

    const a = await ferryd.request('POST', '/v1/allocations', attach('c1'));
    expect(a.status, a.body).toBe(200);
    const generation = (a.json as AllocationBody).generation;
    const put = await ferryd.request('PUT', '/v1/endpoints/c1', {
      network: 'ferry',
      ifName: 'eth0',
      generation,
      nics: [{ ifName: 'eth0', mac: '0a:58:0a:f4:01:01', containerIfIndex: 7 }],
    });
    expect(put.status, put.body).toBe(200);
    const get = await ferryd.request('GET', '/v1/endpoints/c1');
    expect(get.json).toMatchObject({ containerId: 'c1', interfaces: [{ state: 'committed', containerIfIndex: 7 }] });

    await ferryd.request('POST', '/v1/allocations', attach('c2'));
    const gc = await ferryd.request('POST', '/v1/gc', {
      network: 'ferry',
      validAttachments: [{ containerId: 'c1', ifName: 'eth0' }],
    });
    expect((gc.json as { removed: { containerId: string }[] }).removed.map((r) => r.containerId)).toEqual(['c2']);

    const rel = await ferryd.request('DELETE', '/v1/endpoints/c1?network=ferry&ifName=eth0');
    expect(rel.status).toBe(200);
    expect(await ferryd.assignedAddresses()).toEqual([]);
    expect((await ferryd.request('GET', '/v1/endpoints/c1')).status).toBe(404);
  });

  test('200 concurrent allocations on separate connections get 200 distinct addresses; exhaustion at 254', async (t) => {
    const { ferryd } = await useNode(t, { networks: [{ name: 'ferry', ipv4: { subnet: '10.50.0.0/24' } }] });
    const ids = Array.from({ length: 200 }, (_, i) => `ctr${i}`);
    const results = await Promise.all(ids.map((id) => ferryd.request('POST', '/v1/allocations', attach(id))));
    expect(results.every((r) => r.status === 200)).toBe(true);
    const addrs = results.flatMap((r) => addressesOf(r.json));
    expect(new Set(addrs).size).toBe(200);

    const again = await Promise.all(
      ids.slice(0, 20).map((id) => ferryd.request('POST', '/v1/allocations', attach(id))),
    );
    expect(again.map((r) => addressesOf(r.json))).toEqual(results.slice(0, 20).map((r) => addressesOf(r.json)));

    // A /24 has 254 allocatable addresses: 54 more succeed, the 255th is refused with code 100.
    const rest = await Promise.all(
      Array.from({ length: 55 }, (_, i) => ferryd.request('POST', '/v1/allocations', attach(`more${i}`))),
    );
    expect(rest.filter((r) => r.status === 200)).toHaveLength(54);
    const refused = rest.filter((r) => r.status !== 200);
    expect(refused.map((r) => r.json)).toEqual([expect.objectContaining({ code: 100 })]);
    expect(await ferryd.assignedAddresses()).toHaveLength(254);
    const inv = await ferryd.request('GET', '/v1/operator/invariants');
    expect(inv.json).toEqual({ ok: true, violations: [] });
  });

  // The group commit answers a write only after its transaction committed: whatever ferryd acknowledged
  // survives kill -9. Each round kills ferryd while requests are outstanding, restarts it, and checks
  // every acknowledgement of every round so far against what ferryd then reports.
  test('kill -9 while writes are in flight, many times: every acknowledged write is there after the restart', async (t) => {
    const { ferryd } = await useNode(t, {
      logLevel: 'warn',
      networks: [{ name: 'ferry', ipv4: { subnet: '10.60.0.0/16' } }],
    });
    /** containerId → the addresses its acknowledged allocation got, or null once its release was acknowledged. */
    const acked = new Map<string, string[] | null>();
    for (let round = 0; round < KILL_ROUNDS; round++) {
      let stop = false;
      let inFlight = 0;
      let unanswered = 0;
      let ackedThisRound = 0;
      const send = async (method: Method, path: string, body?: unknown) => {
        inFlight++;
        try {
          return await ferryd.request(method, path, body);
        } catch {
          unanswered++;
          return undefined;
        } finally {
          inFlight--;
        }
      };
      const worker = async (w: number) => {
        for (let i = 0; !stop; i++) {
          const id = `r${round}-w${w}-${i}`;
          const a = await send('POST', '/v1/allocations', attach(id));
          if (!a) return;
          expect(a.status, a.body).toBe(200);
          acked.set(id, addressesOf(a.json));
          ackedThisRound++;
          if (i % 2 === 1) continue;
          const d = await send('DELETE', `/v1/endpoints/${id}?network=ferry&ifName=eth0`);
          if (!d) {
            // A release without an answer may or may not have happened: the model forgets the container.
            acked.delete(id);
            return;
          }
          expect(d.status, d.body).toBe(200);
          acked.set(id, null);
        }
      };
      let finished = 0;
      const workers = Array.from({ length: 8 }, (_, w) =>
        worker(w).finally(() => {
          finished++;
        }),
      );
      // Kill once this round has acknowledged writes and requests are outstanding (not after a set time).
      // Workers that all ended first (ferryd died on its own, an assertion failed) end the wait with their error.
      while (!(ackedThisRound >= 20 && inFlight >= 4)) {
        if (finished === workers.length) {
          await Promise.all(workers);
          throw new Error('every worker ended before the kill: ferryd stopped answering on its own');
        }
        await new Promise((r) => setImmediate(r));
      }
      await ferryd.kill('SIGKILL');
      stop = true;
      await Promise.all(workers);
      expect(unanswered, 'requests in flight when ferryd was killed').toBeGreaterThan(0);

      const raw = new Database(ferryd.database, { readonly: true, fileMustExist: true });
      try {
        expect(raw.pragma('integrity_check', { simple: true })).toBe('ok');
      } finally {
        raw.close();
      }
      await ferryd.start();
      const listed = (await ferryd.request('GET', '/v1/operator/endpoints')).json as {
        endpoints: { containerId: string; interfaces: { addresses: { address: string }[] }[] }[];
      };
      const stored = new Map(
        listed.endpoints.map((e) => [e.containerId, e.interfaces.flatMap((i) => i.addresses.map((a) => a.address))]),
      );
      const lost = [...acked].filter(([id, addrs]) =>
        addrs === null ? stored.has(id) : JSON.stringify(stored.get(id)) !== JSON.stringify(addrs),
      );
      expect(lost, `round ${round}: acknowledged writes not as acknowledged`).toEqual([]);
      expect((await ferryd.request('GET', '/v1/operator/invariants')).json).toEqual({ ok: true, violations: [] });
    }
  });

  test('a second ferryd on the same database refuses to start, naming the lock', async (t) => {
    const { ferryd } = await useNode(t);
    const second = await execa(
      `${DIST_BIN}/ferryd`,
      ['--config', ferryd.configPath, '--socket', `${ferryd.dir}/other.sock`],
      {
        reject: false,
        timeout: 20_000,
      },
    );
    expect(second.exitCode).toBe(1);
    expect(second.stderr).toMatch(/^ferryd: database .* is in use by another ferryd/m);
    expect((await ferryd.request('GET', '/readyz')).status).toBe(200);
  });

  test('bad config is refused with a message naming the field', async (t) => {
    const file = join(useTmpDir(t, 'config'), 'ferryd.json');
    writeFileSync(file, JSON.stringify({ networks: [{ name: 'x', ipv4: { subnet: '10.0.0.1/24' } }] }));
    const r = await execa(`${DIST_BIN}/ferryd`, ['--config', file], { reject: false });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain('networks[0].ipv4.subnet: "10.0.0.1/24" has host bits set');
    // --check says the same without starting anything, and accepts a good config.
    const check = await execa(`${DIST_BIN}/ferryd`, ['--check', '--config', file], { reject: false });
    expect(check.exitCode).toBe(1);
    expect(check.stderr).toContain('has host bits set');
    const socket = join(useTmpDir(t, 'check'), 'never.sock');
    writeFileSync(file, JSON.stringify({ socket, networks: [{ name: 'x', ipv4: { subnet: '10.0.0.0/24' } }] }));
    const ok = await execa(`${DIST_BIN}/ferryd`, ['--check', '--config', file], { reject: false });
    expect(ok.exitCode, ok.stderr).toBe(0);
    expect(ok.stdout).toBe(`ferryd: config ${file} is valid (networks: x)`);
    expect(existsSync(socket)).toBe(false);
  });

  test('SIGTERM: an orderly stop, exit 0, and the state is there after a restart', async (t) => {
    const { ferryd } = await useNode(t);
    await ferryd.request('POST', '/v1/allocations', attach('c1'));
    await ferryd.stop();
    expect(ferryd.exitCode).toBe(0);
    expect(ferryd.log()).toContain('ferryd stopped');
    await ferryd.start();
    expect(await ferryd.assignedAddresses()).toHaveLength(2);
  });
});

test('SIGTERM while a child of ferryd (an `ip`) runs: ferryd finishes its stop and exits 0, not killed by the signal raised again', async (t) => {
  // A stand-in `ip` first on ferryd's PATH: once the mark exists, the next call says so and takes 3 s.
  const bin = useTmpDir(t, 'slow-ip');
  const mark = join(bin, 'slow');
  const realIp = (await execa('sh', ['-c', 'command -v ip'])).stdout.trim();
  writeFileSync(
    join(bin, 'ip'),
    `#!/bin/sh\nif [ -e '${mark}' ]; then touch '${mark}.seen'; sleep 3; fi\nexec '${realIp}' "$@"\n`,
    { mode: 0o755 },
  );
  const node = await useNodeNetns(t);
  const ferryd = await useFerryd(t, {
    netns: node,
    config: FAST_PASSES,
    env: { PATH: `${bin}:${process.env.PATH}` },
  });
  writeFileSync(mark, '');
  await waitFor('ferryd running the slow ip', async () => existsSync(`${mark}.seen`), 15_000);
  await ferryd.stop();
  expect(ferryd.exitCode, ferryd.log().slice(-3000)).toBe(0);
  // The stop's last step: the socket goes.
  expect(existsSync(ferryd.socket)).toBe(false);
});
