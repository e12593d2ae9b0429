import { main } from '../main';

main(process.argv.slice(2), process.env).then(
  (code) => {
    // Exit now: after the shutdown grace period connections may still be open.
    process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(`ferryd: unexpected error: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exitCode = 1;
  },
);
