/// <reference types="bun-types" />
/**
 * SyncFs over libc (the Bun binary's implementation, chosen by the "bun" import condition: fs.ts). Each call is
 * the system call Node's would make, retried on EINTR; failures throw Node-shaped errors.
 */
import { CString, toArrayBuffer } from 'bun:ffi';
import { cstr, ERRNO, type ErrnoError, errnoError, libc, uninterrupted } from '@ferry/sys/libc';
import { concatBytes, utf8Decode, utf8Encode } from '@ferry/sys/utf8';
import type { FileStat, OpenFlags, SyncFs } from './sync-fs';

const { EEXIST, EINTR, ENOENT } = ERRNO;
const ARM64 = process.arch === 'arm64';
// The one open(2) flag used here that differs between x86-64 and arm64.
const O_NOFOLLOW = ARM64 ? 0o100000 : 0o400000;
const O_CLOEXEC = 0o2000000;
const FLAGS: Record<Exclude<OpenFlags, number>, number> = {
  r: 0,
  a: 0o1 | 0o100 | 0o2000,
  'a+': 0o2 | 0o100 | 0o2000,
  w: 0o1 | 0o100 | 0o1000,
  wx: 0o1 | 0o100 | 0o1000 | 0o200,
};
const AT_FDCWD = -100;
const AT_EMPTY_PATH = 0x1000;
const STATX_BASIC_STATS = 0x7ff;
const S_IFMT = 0o170000;
/** readdir64's struct dirent64: d_ino, d_off (8 each), d_reclen (2), d_type (1), then d_name. */
const D_NAME_OFFSET = 19;

/** Runs a call until it is not interrupted by a signal; throws its errno error when it fails. */
function check(syscall: string, path: string | undefined, call: () => number | bigint): number {
  const r = uninterrupted(call);
  if (r < 0) throw errnoError(syscall, path);
  return r;
}

/** glibc's makedev: st_dev as Node reports it, from statx's major and minor. */
const makedev = (major: number, minor: number) =>
  (major & 0xfffff000) * 2 ** 32 + (major & 0xfff) * 2 ** 8 + (minor & 0xffffff00) * 2 ** 12 + (minor & 0xff);

/** A little-endian u64 as a number, read without BigInt (whose code costs each exec ~0.6 MiB). */
const u64 = (v: DataView, at: number) => v.getUint32(at + 4, true) * 2 ** 32 + v.getUint32(at, true);

function statxOf(syscall: string, dirfd: number, path: string, flags: number, shown?: string): FileStat {
  const b = new Uint8Array(256);
  check(syscall, shown, () => libc().statx(dirfd, cstr(path), flags, STATX_BASIC_STATS, b));
  const v = new DataView(b.buffer);
  const mode = v.getUint16(28, true) & S_IFMT;
  return {
    dev: makedev(v.getUint32(136, true), v.getUint32(140, true)),
    ino: u64(v, 32),
    size: u64(v, 40),
    isFile: () => mode === 0o100000,
    isDirectory: () => mode === 0o040000,
    isCharacterDevice: () => mode === 0o020000,
  };
}

function writeFd(fd: number, data: Uint8Array | string): number {
  const b = typeof data === 'string' ? utf8Encode(data) : data;
  if (b.length === 0) return 0;
  return check('write', undefined, () => libc().write(fd, b, b.length));
}

function openFile(path: string, flags: OpenFlags, mode = 0o666): number {
  const f = typeof flags === 'number' ? flags : FLAGS[flags];
  return check('open', path, () => libc().open(cstr(path), f | O_CLOEXEC, mode));
}

function closeFd(fd: number): void {
  if (libc().close(fd) === 0) return;
  const e = errnoError('close');
  // Neither retried nor an error: after EINTR the descriptor is closed anyway on Linux, and libuv (so Node's
  // closeSync) reports success. Thrown, it would fail a write whose data was all written and synced.
  if (-e.errno !== EINTR) throw e;
}

function readFd(fd: number, buf: Uint8Array, offset: number, length: number): number {
  if (length === 0) return 0;
  const at = buf.subarray(offset, offset + length);
  return check('read', undefined, () => libc().read(fd, at, at.length));
}

function makeDir(path: string, opts: { recursive?: boolean; mode?: number } = {}): void {
  const mode = opts.mode ?? 0o777;
  const mkdir = () => check('mkdir', path, () => libc().mkdir(cstr(path), mode));
  try {
    mkdir();
  } catch (err) {
    if (!opts.recursive) throw err;
    const parent = path.slice(0, path.lastIndexOf('/'));
    if (-(err as ErrnoError).errno !== ENOENT || parent === '') {
      existingDirOr(path, err);
      return;
    }
    makeDir(parent, opts);
    try {
      mkdir();
    } catch (again) {
      // Shims run at once: another may make `path` once its parent is there; a directory is what was wanted.
      existingDirOr(path, again);
    }
  }
}

/** Recursive mkdir's EEXIST: fine for a directory, thrown for anything else. */
function existingDirOr(path: string, err: unknown): void {
  if (-(err as ErrnoError).errno === EEXIST && statxOf('stat', AT_FDCWD, path, 0, path).isDirectory()) return;
  throw err;
}

function listDir(dir: string): string[] {
  const c = libc();
  const d = c.opendir(cstr(dir));
  if (!d) throw errnoError('scandir', dir);
  const errnoCell = new Int32Array(toArrayBuffer(c.__errno_location() ?? 0, 0, 4));
  const names: string[] = [];
  try {
    for (;;) {
      // readdir64 returns null both at the end and on an error; only errno tells them apart.
      errnoCell[0] = 0;
      const e = c.readdir64(d);
      if (!e) {
        if (errnoCell[0] !== 0) throw errnoError('scandir', dir, errnoCell[0]);
        break;
      }
      const name = new CString(e, D_NAME_OFFSET).toString();
      if (name !== '.' && name !== '..') names.push(name);
    }
  } finally {
    c.closedir(d);
  }
  // Node's order (libuv sorts with strcmp): byte order, which is UTF-16 order for the names Ferry writes.
  return names.sort();
}

function readText(path: string): string {
  const fd = openFile(path, 'r');
  try {
    const chunks: Uint8Array[] = [];
    const buf = new Uint8Array(64 * 1024);
    for (;;) {
      const n = readFd(fd, buf, 0, buf.length);
      if (n === 0) return utf8Decode(concatBytes(chunks));
      chunks.push(buf.slice(0, n));
    }
  } finally {
    closeFd(fd);
  }
}

function writeText(path: string, data: string): void {
  const fd = openFile(path, 'w');
  try {
    let b = utf8Encode(data);
    while (b.length > 0) b = b.subarray(writeFd(fd, b));
  } finally {
    closeFd(fd);
  }
}

export default {
  openSync: openFile,
  closeSync: closeFd,
  readSync: readFd,
  writeSync: writeFd,
  fsyncSync: (fd) => void check('fsync', undefined, () => libc().fsync(fd)),
  fstatSync: (fd) => statxOf('fstat', fd, '', AT_EMPTY_PATH),
  statSync: (path) => statxOf('stat', AT_FDCWD, path, 0, path),
  readdirSync: listDir,
  renameSync: (from, to) => void check('rename', from, () => libc().rename(cstr(from), cstr(to))),
  unlinkSync: (path) => void check('unlink', path, () => libc().unlink(cstr(path))),
  mkdirSync: makeDir,
  readFileSync: readText,
  writeFileSync: writeText,
  constants: { O_RDONLY: 0, O_NOFOLLOW, O_NONBLOCK: 0o4000 },
} satisfies SyncFs;
