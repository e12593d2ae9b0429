/// <reference types="bun-types" />
// The shipped binary (bun build --compile). Bun's console.log and Bun.stdin are its cheap paths;
// process.stdout.write would pull in the Node stream layer and cost ~20 ms per pod, and node:tty
// alone ~3 ms, so a terminal on stdin is recognised with fstat instead.
import { fstatSync } from 'node:fs';
import { main } from '../main';
import { bunRuntime } from '../runtime/bun';

const code = await main(
  process.env,
  {
    readStdin: async () =>
      process.env.CNI_COMMAND && !fstatSync(0).isCharacterDevice() ? Bun.stdin.text() : undefined,
    print: (json) => console.log(json),
    printErr: (text) => console.error(text.trimEnd()),
  },
  bunRuntime,
);
process.exit(code);
