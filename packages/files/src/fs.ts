/**
 * The process's SyncFs (sync-fs.ts): #fs-impl is libc in the Bun binary and node:fs everywhere else, by
 * the package's import conditions.
 */
import impl from '#fs-impl';
import type { SyncFs } from './sync-fs';

export type { FileStat } from './sync-fs';
export const {
  openSync,
  closeSync,
  readSync,
  writeSync,
  fsyncSync,
  fstatSync,
  statSync,
  readdirSync,
  renameSync,
  unlinkSync,
  mkdirSync,
  readFileSync,
  writeFileSync,
  constants,
}: SyncFs = impl;
