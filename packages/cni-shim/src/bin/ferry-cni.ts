/// <reference types="bun-types" />
// The shipped binary (bun build --compile). Bun's console.log and Bun.stdin are its cheap paths;
// process.stdout.write would pull in the Node stream layer and cost ~20 ms per pod.
import { isatty } from 'node:tty';
import { main } from '../main';
import { bunRuntime } from '../runtime/bun';

const code = await main(
  process.env,
  {
    stdin: process.env.CNI_COMMAND && !isatty(0) ? await Bun.stdin.text() : undefined,
    print: (json) => console.log(json),
    printErr: (text) => console.error(text.trimEnd()),
  },
  bunRuntime,
);
process.exit(code);
