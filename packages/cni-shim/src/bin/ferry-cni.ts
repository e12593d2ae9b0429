/// <reference types="bun-types" />
// The shipped binary (bun build --compile). stdin and stdout are plain synchronous fd reads and writes:
// Bun.stdin.text(), process.stdout and console.log set up async stream machinery that costs several
// milliseconds per pod (bench/shim-phases.bench.ts), and node:tty alone ~3 ms, so a terminal on stdin is
// recognised with fstat instead.
import { fstatSync, readSync, writeSync } from '@ferry/files/fs';
import { POLLOUT, pollUntil } from '@ferry/sys/libc';
import { concatBytes, utf8Decode, utf8Encode } from '@ferry/sys/utf8';
import { main } from '../main';
import { bunRuntime } from '../runtime/bun';

const code = await main(
  process.env,
  {
    readStdin: async () => (process.env.CNI_COMMAND && !fstatSync(0).isCharacterDevice() ? readAll(0) : undefined),
    print: (json) => writeAll(1, `${json}\n`),
    printErr: (text) => writeAll(2, `${text.trimEnd()}\n`),
  },
  bunRuntime,
);
process.exit(code);

/**
 * Reads `fd` to its end. A runtime may hand over a non-blocking pipe whose writer has not written yet: a
 * read then fails with EAGAIN (the Node build saw it with 50 shims at once), and is tried again shortly.
 */
async function readAll(fd: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  const buf = new Uint8Array(64 * 1024);
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, buf, 0, buf.length, null);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      await new Promise((r) => setTimeout(r, 1));
      continue;
    }
    if (n === 0) return utf8Decode(concatBytes(chunks));
    chunks.push(buf.slice(0, n));
  }
}

/**
 * writeSync may write less than asked on a pipe; the runtime reads the whole document. A non-blocking pipe
 * that is full fails with EAGAIN: the write waits for room, up to a minute (a runtime that reads nothing
 * for that long has given up on this plugin).
 */
function writeAll(fd: number, text: string): void {
  let buf = utf8Encode(text);
  const until = performance.now() + 60_000;
  while (buf.length > 0) {
    try {
      buf = buf.subarray(writeSync(fd, buf));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      if (!pollUntil(fd, POLLOUT, until)) throw err;
    }
  }
}
