import * as fs from 'node:fs';
import type { SyncFs } from './sync-fs';

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
}: SyncFs = fs;
