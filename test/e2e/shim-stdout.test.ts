/**
 * The result reaches the runtime however its stdout pipe is set: here one that is non-blocking and already
 * full when the shim writes (a runtime that reads late). The shim waits for room instead of failing.
 */
import { spawn } from 'node:child_process';
import { closeSync, constants, openSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { expect, test } from 'vitest';
import { DIST_BIN } from '../fixtures/paths';
import { useTmpDir } from '../fixtures/tmp';

const isEagain = (err: unknown) => (err as NodeJS.ErrnoException).code === 'EAGAIN';

test('VERSION on a full non-blocking stdout pipe: the document arrives once the runtime reads', async (t) => {
  const fifo = join(useTmpDir(t, 'stdout'), 'stdout');
  await execa('mkfifo', [fifo]);
  const readFd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const writeFd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  t.onTestFinished(() => closeSync(readFd));
  let filler = 0;
  try {
    for (;;) filler += writeSync(writeFd, Buffer.alloc(4096, 0x20));
  } catch (err) {
    if (!isEagain(err)) throw err;
  }
  expect(filler).toBeGreaterThan(0);

  // The child's stdio 0-2 are made blocking by Node's spawn, so the pipe goes in as fd 3 and the shell
  // moves it to 1 as it is, O_NONBLOCK and all.
  const child = spawn('sh', ['-c', 'exec "$0" 1>&3 3>&-', join(DIST_BIN, 'ferry-cni')], {
    env: { PATH: process.env.PATH, CNI_COMMAND: 'VERSION' },
    stdio: ['pipe', 'ignore', 'pipe', writeFd],
  });
  if (!child.stdin || !child.stderr) throw new Error('spawn gave no stdin or stderr pipe');
  child.stdin.end('{"cniVersion": "1.0.0"}');
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  closeSync(writeFd);
  // Long enough for the shim to have written, had it not waited.
  await sleep(300);

  const chunks: Buffer[] = [];
  const buf = Buffer.alloc(65536);
  for (;;) {
    let n: number;
    try {
      n = readSync(readFd, buf);
    } catch (err) {
      if (!isEagain(err)) throw err;
      await sleep(5);
      continue;
    }
    if (n === 0) break;
    chunks.push(Buffer.from(buf.subarray(0, n)));
  }
  const all = Buffer.concat(chunks);
  expect(await exited, stderr).toBe(0);
  expect(all.subarray(0, filler).every((b) => b === 0x20)).toBe(true);
  expect(JSON.parse(all.subarray(filler).toString('utf8'))).toEqual({
    cniVersion: '1.0.0',
    supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
  });
});
