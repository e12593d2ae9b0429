// ferry-cni on Node: the same main() through the Node runtime. Built to dist/lib/ferry-cni-node.mjs
// so the e2e suite exercises this side of the runtime seam as well.
import { isatty } from 'node:tty';
import { main } from '../main';
import { nodeRuntime } from '../runtime/node';

// Read as a stream, not readFileSync(0): a runtime may hand over a non-blocking pipe, on which a
// synchronous read fails with EAGAIN while the config is still on its way (seen with 50 shims at once).
async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

const code = await main(
  process.env,
  {
    readStdin: async () => (process.env.CNI_COMMAND && !isatty(0) ? readAll(process.stdin) : undefined),
    print: (json) => process.stdout.write(`${json}\n`),
    printErr: (text) => process.stderr.write(text),
  },
  nodeRuntime,
);
process.exitCode = code;
