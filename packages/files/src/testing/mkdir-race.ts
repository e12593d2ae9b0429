/**
 * Recursive mkdirs of fresh nested paths, made by several processes at once (fs-libc.test.ts starts
 * them): each creator races the others for every level. Usage under Bun: `bun mkdir-race.ts DIR N`
 * prints how many of the N calls threw, and the first error.
 */
import { mkdirSync } from '@ferry/files/fs';

const [dir, count] = [process.argv[2], Number(process.argv[3])];
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
