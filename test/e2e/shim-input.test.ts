/**
 * Bad input: every malformed environment or config gets the right CNI code and a message naming the
 * problem; nothing is created and nothing in ferryd changes.
 */
import { describe, expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import { linkNames } from '../fixtures/kernel';
import { useNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { runShim, type ShimCall } from '../fixtures/shim';

describe('ferry-cni input validation', () => {
  test('the matrix of bad env and stdin', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    const good: ShimCall = { containerId: newContainerId(), ifName: 'eth0', netns: pod, conf: netConf(ferryd) };
    const cases: [string, ShimCall, number, RegExp][] = [
      ['non-JSON stdin', { ...good, stdin: '{"cniVersion": ' }, 6, /^decode network config: /],
      ['stdin that is a JSON array', { ...good, stdin: '[]' }, 6, /expected a JSON object/],
      [
        'huge stdin',
        { ...good, stdin: JSON.stringify({ ...good.conf, pad: 'x'.repeat(2 * 1024 * 1024) }) },
        6,
        /larger than/,
      ],
      [
        'unknown cniVersion',
        { ...good, conf: { ...good.conf, cniVersion: '9.9.9' } },
        1,
        /^incompatible CNI versions$/,
      ],
      ['missing cniVersion (0.1.0)', { ...good, conf: { ...good.conf, cniVersion: undefined } }, 1, /incompatible/],
      ['name of the wrong type', { ...good, conf: { ...good.conf, name: 42 } }, 7, /^invalid network config: name: /],
      ['network name with a path', { ...good, conf: { ...good.conf, name: '../../etc' } }, 7, /name: must match/],
      ['mtu as a string', { ...good, conf: { ...good.conf, mtu: '1500' } }, 7, /mtu: /],
      [
        'a delegated ipam',
        { ...good, conf: { ...good.conf, ipam: { type: 'host-local' } } },
        2,
        /ipam.type "host-local"/,
      ],
      ['container ID with a slash', { ...good, containerId: 'abc/def' }, 4, /^invalid CNI_CONTAINERID "abc\/def": /],
      ['container ID "..", a path escape', { ...good, containerId: '..' }, 4, /CNI_CONTAINERID/],
      ['container ID with a space', { ...good, containerId: 'a b' }, 4, /CNI_CONTAINERID/],
      ['ifName of 16 bytes', { ...good, ifName: 'eth0123456789abc' }, 4, /CNI_IFNAME .*longer than 15 bytes/],
      ['ifName ".."', { ...good, ifName: '..' }, 4, /CNI_IFNAME/],
      ['ifName with a slash', { ...good, ifName: 'a/b' }, 4, /CNI_IFNAME/],
      ['ifName with a space', { ...good, ifName: 'a b' }, 4, /CNI_IFNAME/],
      [
        'no CNI_CONTAINERID nor CNI_IFNAME',
        { ...good, containerId: undefined, ifName: undefined },
        4,
        /^required env variables \[CNI_CONTAINERID,CNI_IFNAME\] missing$/,
      ],
      ['relative CNI_NETNS', { ...good, netns: 'var/run/netns/x' }, 4, /CNI_NETNS/],
      ['CNI_NETNS that does not exist', { ...good, netns: '/var/run/netns/ferry-t-absent' }, 4, /CNI_NETNS .*ENOENT/],
      ['CNI_NETNS of the plugin itself', { ...good, netns: node }, 8, /plugin's own network namespace/],
      ['unknown CNI_ARGS key', { ...good, cniArgs: 'FOO=bar' }, 4, /^invalid CNI_ARGS: unknown key "FOO"$/],
      ['unknown CNI_COMMAND', { ...good, env: { CNI_COMMAND: 'EXPLODE' } }, 4, /^unknown CNI_COMMAND: EXPLODE$/],
    ];
    for (const [what, call, code, msg] of cases) {
      const r = await runShim(node, 'ADD', call);
      expect(r.exitCode, what).toBe(1);
      expect(r.json?.code, `${what}: ${r.stdout}`).toBe(code);
      expect(String(r.json?.msg), what).toMatch(msg);
      expect(r.json?.cniVersion, what).toMatch(/^\d+\.\d+\.\d+$/);
      expect(r.stderr, what).toBe('');
    }
    const unknownVersion = await runShim(node, 'ADD', cases[3]?.[1] as ShimCall);
    expect(unknownVersion.json?.details).toBe(
      'config is "9.9.9", plugin supports ["0.3.0" "0.3.1" "0.4.0" "1.0.0" "1.1.0"]',
    );
    expect(await linkNames(node)).toEqual(['lo']);
    expect(await linkNames(pod)).toEqual(['lo']);
    expect(await ferryd.assignedAddresses()).toEqual([]);
    expect((await ferryd.request('GET', '/v1/operator/endpoints')).json).toEqual({ endpoints: [] });
  });

  test('GC and STATUS below 1.1.0 and CHECK below 0.4.0 are code 1', async (t) => {
    const { node, ferryd } = await useNode(t);
    const pod = await useNetns(t, 'pod');
    const base = { containerId: newContainerId(), ifName: 'eth0', netns: pod };
    for (const [cmd, version] of [
      ['GC', '1.0.0'],
      ['STATUS', '0.4.0'],
      ['CHECK', '0.3.1'],
    ] as const) {
      const r = await runShim(node, cmd, { ...base, conf: netConf(ferryd, { cniVersion: version, prevResult: {} }) });
      expect(r.json, cmd).toMatchObject({ code: 1, msg: `config version does not allow ${cmd}` });
    }
  });

  test('VERSION needs nothing but CNI_COMMAND; no CNI_COMMAND prints the about text to stderr', async (t) => {
    const node = await useNetns(t, 'node');
    const v = await runShim(node, 'VERSION', { conf: { cniVersion: '0.4.0' } });
    expect(v.exitCode).toBe(0);
    expect(v.json).toEqual({ cniVersion: '0.4.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] });
    const bare = await runShim(node, 'VERSION', { conf: {}, stdin: '' });
    expect(bare.json?.cniVersion).toBe('1.1.0');
    const about = await runShim(node, 'VERSION', { conf: {}, env: { CNI_COMMAND: undefined } });
    expect(about.exitCode).toBe(0);
    expect(about.stdout).toBe('');
    expect(about.stderr).toContain('CNI protocol versions supported: 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0');
  });
});
