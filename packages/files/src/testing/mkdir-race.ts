/**
 * Recursive mkdirs of fresh nested paths, made by several processes at once (fs-libc.test.ts starts
 * them): each creator races the others for every level. Usage under Bun: `bun mkdir-race.ts DIR N PEERS`
 * waits until PEERS processes have started (a barrier of files in DIR, so the race does not hang on how
 * fast a loaded machine starts them), then prints how many of the N calls threw, and the first error.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { mkdirSync } from '@ferry/files/fs';

const [dir, count, peers] = [String(process.argv[2]), Number(process.argv[3]), Number(process.argv[4])];
const startedCount = () => readdirSync(dir).filter((f) => f.startsWith('started-')).length;
writeFileSync(`${dir}/started-${process.pid}`, '');
const giveUpAt = Date.now() + 30_000;
while (startedCount() < peers) {
  if (Date.now() > giveUpAt) throw new Error(`only ${startedCount()} of ${peers} racers started`);
  Bun.sleepSync(1);
}
let failures = 0;
let first = '';
for (let i = 0; i < count; i++) {
  try {
    mkdirSync(`${dir}/r${i}/p/q`, { recursive: true, mode: 0o700 });
  } catch (err) {
    failures++;
    first ||= String(err);
  }
}
process.stdout.write(JSON.stringify({ failures, first }));
