/**
 * ferryctl's unit tests run against a real ferryd: the daemon's own test harness (a temp SQLite file,
 * the real services and app, the test's clock) listening on a unix socket in the test's temp dir, and
 * main() called in-process the way bin/ferryctl.ts calls it. Test code only: ferryctl itself never
 * imports the daemon (it shares through @ferry/shared-types); this harness alone may, through the one
 * export @ferry/cns-daemon has for it (its devDependency).
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { addDevice, type Harness, tempDir, useApp } from '@ferry/cns-daemon/testing/harness';
import type { Allocation } from '@ferry/shared-types/api/allocations';
import { attachmentFileNameOf } from '@ferry/shared-types/attachment-file';
import type { TestContext } from 'vitest';
import { expect } from 'vitest';
import { main } from '../main';

export { addDevice, type Harness, tempDir };

/**
 * A ferryd serving on `h.config.socket`, or with `surface: 'tcp'` on a loopback port (`url`); closed when
 * the test finishes.
 */
export async function useFerryd(
  t: TestContext,
  overrides: Record<string, unknown> = {},
  opts: Parameters<typeof useApp>[2] = {},
): Promise<Harness & { url?: string }> {
  const h = await useApp(t, overrides, opts);
  if (opts.surface !== 'tcp') {
    await h.app.listen({ path: h.config.socket });
    return h;
  }
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  return { ...h, url: `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}` };
}

export interface CtlRun {
  code: number;
  out: string;
  err: string;
}

/** A successful run that printed `lines` and nothing on stderr. */
export const printed = (...lines: string[]): CtlRun => ({ code: 0, err: '', out: `${lines.join('\n')}\n` });

/** Runs `ferryctl ARGV` with `env`, collecting what it writes. */
export async function runCtl(argv: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<CtlRun> {
  let out = '';
  let err = '';
  const code = await main(argv, env, {
    out: (text) => {
      out += text;
    },
    err: (text) => {
      err += text;
    },
  });
  return { code, out, err };
}

/** Runs `ferryctl --socket SOCKET ARGS` against `h`. */
export function ctl(h: Harness, ...args: string[]): Promise<CtlRun> {
  return runCtl(['--socket', h.config.socket, ...args]);
}

/** `ferryctl … --json` against `h`: exit 0, nothing on stderr, and the document it printed. */
export async function ctlJson(h: Harness, ...args: string[]): Promise<unknown> {
  const r = await ctl(h, ...args, '--json');
  expect(r, r.err).toMatchObject({ code: 0, err: '' });
  return JSON.parse(r.out);
}

/**
 * A listing: `ferryctl ARGS` prints `table` (written as it is printed, from the line after the opening
 * backtick), `ferryctl ALIAS` (its explicit subcommand) prints the same, and `ferryctl ARGS --json`
 * prints what ferryd answers at `url`.
 */
export async function expectListing(
  h: Harness,
  { args, alias, url }: { args: string[]; alias: string[]; url: string },
  table: string,
): Promise<void> {
  const r = await ctl(h, ...args);
  expect(r).toEqual({ code: 0, err: '', out: table.replace(/^\n/, '') });
  expect(await ctl(h, ...alias)).toEqual(r);
  expect(await ctlJson(h, ...args)).toEqual(await answerOf(h, url));
}

/** What ferryd itself answers to a GET, to hold `--json` output to. */
export async function answerOf(h: Harness, url: string): Promise<unknown> {
  const r = await h.app.inject({ method: 'GET', url });
  expect(r.statusCode, r.body).toBe(200);
  return r.json();
}

/** A pod's attachment as the shim would make it: allocate, then (unless told) commit. */
export async function attach(
  h: Harness,
  containerId: string,
  opts: {
    ifName?: string;
    netns?: string;
    pod?: { namespace: string; name: string };
    delegatedNICs?: { group: string; count: number };
    commit?: boolean;
  } = {},
): Promise<Allocation> {
  const ifName = opts.ifName ?? 'eth0';
  const r = await h.app.inject({
    method: 'POST',
    url: '/v1/allocations',
    payload: {
      network: 'ferry',
      containerId,
      ifName,
      // A path that exists, so the node checks see a live pod.
      netns: opts.netns ?? '/proc/self/ns/net',
      ...(opts.pod ? { pod: opts.pod } : {}),
      ...(opts.delegatedNICs ? { delegatedNICs: opts.delegatedNICs } : {}),
    },
  });
  expect(r.statusCode, r.body).toBe(200);
  const a: Allocation = r.json();
  if (opts.commit === false) return a;
  const put = await h.app.inject({
    method: 'PUT',
    url: `/v1/endpoints/${containerId}`,
    payload: {
      network: 'ferry',
      ifName,
      generation: a.generation,
      nics: [{ ifName, mac: '0a:58:0a:f4:01:01', containerIfIndex: 3 }],
    },
  });
  expect(put.statusCode, put.body).toBe(200);
  return a;
}

/** A delete-queue entry's text, as the shim writes it for (ferry, containerId, eth0). */
export function queueEntryText(containerId: string, queuedAtMs: number): string {
  const queuedAt = new Date(queuedAtMs).toISOString();
  return JSON.stringify({ version: 1, network: 'ferry', containerId, ifName: 'eth0', netns: '', queuedAt });
}

/**
 * A DEL the shim queued for (ferry, containerId, eth0) at `queuedAtMs`, under the name the shim gives it
 * (or `text` under that name: an entry ferryd cannot read). Returns the file name.
 */
export function queueDel(h: Harness, containerId: string, queuedAtMs: number, text?: string): string {
  const sha256Hex = (s: string) => createHash('sha256').update(s).digest('hex');
  const name = attachmentFileNameOf(sha256Hex, 'ferry', containerId, 'eth0');
  writeFileSync(join(h.config.deleteQueue, name), text ?? queueEntryText(containerId, queuedAtMs));
  return name;
}
