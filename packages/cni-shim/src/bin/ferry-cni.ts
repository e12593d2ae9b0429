/// <reference types="bun-types" />
// The shipped binary (bun build --compile). stdin and stdout are plain synchronous fd reads and writes:
// Bun.stdin.text(), process.stdout and console.log set up async stream machinery that costs several
// milliseconds per pod (bench/shim-phases.bench.ts), and node:tty alone ~3 ms, so a terminal on stdin is
// recognised with fstat instead.
import { fstatSync, readFileSync, writeSync } from 'node:fs';
import { main } from '../main';
import { bunRuntime } from '../runtime/bun';

const code = await main(
  process.env,
  {
    readStdin: async () =>
      process.env.CNI_COMMAND && !fstatSync(0).isCharacterDevice() ? readFileSync(0, 'utf8') : undefined,
    print: (json) => writeAll(1, `${json}\n`),
    printErr: (text) => writeAll(2, `${text.trimEnd()}\n`),
  },
  bunRuntime,
);
process.exit(code);

/** writeSync may write less than asked on a pipe; the runtime reads the whole document. */
function writeAll(fd: number, text: string): void {
  let buf = Buffer.from(text);
  while (buf.length > 0) buf = buf.subarray(writeSync(fd, buf));
}
