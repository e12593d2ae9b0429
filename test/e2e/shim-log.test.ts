/**
 * The shim's log under many shims at once, with a tiny size cap so that it rotates again and again
 * (issue 13 part 5): every line of every process is kept exactly once and whole, and no more files are
 * left than the live one and `logMaxBackups`.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { netConf, newContainerId } from '../fixtures/conf';
import type { Ferryd } from '../fixtures/ferryd';
import type { TestNetns } from '../fixtures/netns';
import { useNode } from '../fixtures/node';
import { runShim } from '../fixtures/shim';

const SHIMS = 50;
const BACKUP_RE = /^cni\.log\.\d{8}T\d{6}\.\d{3}Z-\d+$/;

interface Line {
  containerId?: string;
  msg: string;
}

/** DEL with no ADD and no netns: a few log lines at debug, the same for every container. */
function delCall(ferryd: Ferryd, logFile: string, extra: Record<string, unknown> = {}) {
  return {
    containerId: newContainerId(),
    ifName: 'eth0',
    netns: '',
    conf: netConf(ferryd, { logFile, logLevel: 'debug', ...extra }),
  };
}

/** What one such DEL writes, from a run of its own with an uncapped log. */
async function linesOfOneDel(node: TestNetns, ferryd: Ferryd): Promise<string[]> {
  const file = join(ferryd.dir, 'baseline.log');
  const del = await runShim(node, 'DEL', delCall(ferryd, file, { logMaxSizeKiB: 0 }));
  expect(del.exitCode, del.stdout).toBe(0);
  const msgs = readFileSync(file, 'utf8')
    .trimEnd()
    .split('\n')
    .map((l) => (JSON.parse(l) as Line).msg);
  expect(msgs).toContain('deleted');
  return msgs.sort();
}

/** Every file in the log folder, each as its lines; throws on a line that is not one whole JSON object. */
function readLogs(dir: string): { files: string[]; lines: string[] } {
  const files = readdirSync(dir).sort();
  const lines: string[] = [];
  for (const f of files) {
    const text = readFileSync(join(dir, f), 'utf8');
    if (text === '') continue;
    expect(text.endsWith('\n'), `${f} ends in a whole line`).toBe(true);
    for (const l of text.slice(0, -1).split('\n')) {
      expect(() => JSON.parse(l), `a whole line in ${f}: ${l.slice(0, 120)}`).not.toThrow();
      lines.push(l);
    }
  }
  return { files, lines };
}

function msgsByContainer(lines: string[]): Map<string, string[]> {
  const by = new Map<string, string[]>();
  for (const l of lines) {
    const { containerId, msg } = JSON.parse(l) as Line;
    by.set(containerId ?? '', [...(by.get(containerId ?? '') ?? []), msg]);
  }
  for (const msgs of by.values()) msgs.sort();
  return by;
}

async function runManyDels(node: TestNetns, ferryd: Ferryd, logFile: string, logMaxBackups: number) {
  const calls = Array.from({ length: SHIMS }, () => delCall(ferryd, logFile, { logMaxSizeKiB: 1, logMaxBackups }));
  const dels = await Promise.all(calls.map((c) => runShim(node, 'DEL', c)));
  expect(dels.filter((d) => d.exitCode !== 0).map((d) => d.stdout)).toEqual([]);
  return calls.map((c) => c.containerId);
}

test(`${SHIMS} shims at once, 1 KiB cap, room for every file: every line kept exactly once, whole`, async (t) => {
  const { node, ferryd } = await useNode(t);
  const expected = await linesOfOneDel(node, ferryd);
  const dir = join(ferryd.dir, 'logs');
  mkdirSync(dir);
  const ids = await runManyDels(node, ferryd, join(dir, 'cni.log'), 100);

  const { files, lines } = readLogs(dir);
  expect(files.filter((f) => f !== 'cni.log' && !BACKUP_RE.test(f))).toEqual([]);
  // ~50 × 5 lines of ~300 bytes against a 1 KiB cap: it rotated, more or fewer times as the shims' first
  // lines (where each looks at the size) interleave.
  expect(files.length).toBeGreaterThan(2);
  expect(files.length).toBeLessThanOrEqual(101);
  expect(new Set(lines).size).toBe(lines.length);
  const by = msgsByContainer(lines);
  expect([...by.keys()].sort()).toEqual([...ids].sort());
  for (const id of ids) expect(by.get(id), id).toEqual(expected);
});

test(`${SHIMS} shims at once, 1 KiB cap, 2 backups: no more than 3 files, every line kept whole and once`, async (t) => {
  const { node, ferryd } = await useNode(t);
  const expected = await linesOfOneDel(node, ferryd);
  const dir = join(ferryd.dir, 'logs');
  mkdirSync(dir);
  await runManyDels(node, ferryd, join(dir, 'cni.log'), 2);

  const { files, lines } = readLogs(dir);
  expect(files.filter((f) => f !== 'cni.log' && !BACKUP_RE.test(f))).toEqual([]);
  expect(files.length).toBeGreaterThanOrEqual(2);
  expect(files.length).toBeLessThanOrEqual(3);
  expect(new Set(lines).size).toBe(lines.length);
  // What was kept is a part of what each process wrote, never more (older files went whole).
  for (const [id, msgs] of msgsByContainer(lines)) {
    const left = [...expected];
    for (const m of msgs) {
      const at = left.indexOf(m);
      expect(at, `${id}: ${m}`).toBeGreaterThanOrEqual(0);
      left.splice(at, 1);
    }
  }
});
