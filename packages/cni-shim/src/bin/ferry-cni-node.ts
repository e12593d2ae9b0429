// ferry-cni on Node: the same main() through the Node runtime. Built to dist/lib/ferry-cni-node.mjs
// so the e2e suite exercises this side of the runtime seam as well.
import { readFileSync } from 'node:fs';
import { isatty } from 'node:tty';
import { main } from '../main';
import { nodeRuntime } from '../runtime/node';

const code = await main(
  process.env,
  {
    readStdin: async () => (process.env.CNI_COMMAND && !isatty(0) ? readFileSync(0, 'utf8') : undefined),
    print: (json) => process.stdout.write(`${json}\n`),
    printErr: (text) => process.stderr.write(text),
  },
  nodeRuntime,
);
process.exitCode = code;
