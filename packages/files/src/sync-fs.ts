/**
 * The synchronous file calls Ferry's processes make, as one narrow interface with two implementations
 * chosen by the package's import conditions (fs.ts): Node's own node:fs (ferryd, ferryctl, tests) and libc
 * through bun:ffi (the shipped ferry-cni binary: Bun's node:fs costs every exec ~5 MiB and ~1 ms, see
 * libc.ts). Semantics are Node's, errors included (`code`, `errno`, `syscall`, `path`).
 */

/** What callers read of a stat: identity, size and type. */
export interface FileStat {
  dev: number;
  ino: number;
  size: number;
  isFile(): boolean;
  isDirectory(): boolean;
  isCharacterDevice(): boolean;
}

/** Flags as Node spells them; numbers are open(2) flags. */
export type OpenFlags = 'r' | 'a' | 'a+' | 'w' | 'wx' | number;

export interface SyncFs {
  openSync(path: string, flags: OpenFlags, mode?: number): number;
  closeSync(fd: number): void;
  /** Reads at most `length` bytes into `buf` at `offset`, at the file position (`null`). */
  readSync(fd: number, buf: Uint8Array, offset: number, length: number, position: null): number;
  /** One write(2): may write less than asked on a pipe or socket. */
  writeSync(fd: number, data: Uint8Array | string): number;
  fsyncSync(fd: number): void;
  fstatSync(fd: number): FileStat;
  statSync(path: string): FileStat;
  /** The names in `dir`, sorted (as Node's). */
  readdirSync(dir: string): string[];
  renameSync(from: string, to: string): void;
  unlinkSync(path: string): void;
  mkdirSync(path: string, opts?: { recursive?: boolean; mode?: number }): unknown;
  readFileSync(path: string, encoding: 'utf8'): string;
  writeFileSync(path: string, data: string): void;
  constants: { O_RDONLY: number; O_NOFOLLOW: number; O_NONBLOCK: number };
}
