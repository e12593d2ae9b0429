/**
 * The same calls through whichever SyncFs the runtime resolves (`@ferry/files/fs`): Node's under
 * vitest, libc's under Bun. fs-libc.test.ts runs it both ways and compares. Usage under Bun:
 * `bun fs-scenario.ts DIR` prints the outcome as JSON.
 */
import * as fs from '@ferry/files/fs';
import type { FileStat } from '../sync-fs';

type Outcome = { ok: unknown } | { code: string; syscall: string; errnoIsNegative: boolean; startsWithCode: boolean };

function attempt(f: () => unknown): Outcome {
  try {
    return { ok: f() };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return {
      code: String(e.code),
      syscall: String(e.syscall),
      errnoIsNegative: typeof e.errno === 'number' && e.errno < 0,
      startsWithCode: e.message.startsWith(`${e.code}: `),
    };
  }
}

const kind = (s: FileStat) => ({ file: s.isFile(), dir: s.isDirectory(), chr: s.isCharacterDevice() });

export function runScenario(dir: string): Record<string, Outcome> {
  const out: Record<string, Outcome> = {};
  const f = `${dir}/file`;
  // Node's recursive mkdir returns the first directory it made; callers ignore it, so the outcome does not.
  out.mkdirRecursive = attempt(() => void fs.mkdirSync(`${dir}/a/b/c`, { recursive: true, mode: 0o750 }));
  out.mkdirRecursiveAgain = attempt(() => void fs.mkdirSync(`${dir}/a/b/c`, { recursive: true }));
  out.mkdirExisting = attempt(() => void fs.mkdirSync(`${dir}/a`));
  out.mkdirUnderFile = attempt(() => {
    fs.writeFileSync(`${dir}/plain`, 'x');
    fs.mkdirSync(`${dir}/plain/sub`, { recursive: true });
  });
  out.statDir = attempt(() => kind(fs.statSync(`${dir}/a/b/c`)));
  out.write = attempt(() => {
    const fd = fs.openSync(f, 'wx', 0o600);
    const n = fs.writeSync(fd, 'héllo ') + fs.writeSync(fd, new Uint8Array([119, 111, 114, 108, 100]));
    fs.fsyncSync(fd);
    const st = fs.fstatSync(fd);
    const byPath = fs.statSync(f);
    fs.closeSync(fd);
    return { n, size: st.size, ...kind(st), sameFile: st.ino === byPath.ino && st.dev === byPath.dev };
  });
  out.openExclusiveAgain = attempt(() => fs.openSync(f, 'wx'));
  out.readFile = attempt(() => fs.readFileSync(f, 'utf8'));
  out.append = attempt(() => {
    const fd = fs.openSync(f, 'a');
    fs.writeSync(fd, '!');
    const size = fs.fstatSync(fd).size;
    fs.closeSync(fd);
    return size;
  });
  out.readAtOffset = attempt(() => {
    const fd = fs.openSync(f, 'r');
    const buf = new Uint8Array(8).fill(46);
    const n = fs.readSync(fd, buf, 2, 4, null);
    fs.closeSync(fd);
    return { n, text: new TextDecoder().decode(buf) };
  });
  out.replace = attempt(() => {
    fs.writeFileSync(f, 'short');
    return fs.readFileSync(f, 'utf8');
  });
  out.rename = attempt(() => {
    fs.renameSync(f, `${dir}/moved`);
    return fs.readdirSync(dir);
  });
  out.listMany = attempt(() => {
    for (const n of ['z', 'B', 'a.1', 'a.10', 'a.2', '_x']) fs.writeFileSync(`${dir}/a/${n}`, n);
    return fs.readdirSync(`${dir}/a`);
  });
  out.unlink = attempt(() => fs.unlinkSync(`${dir}/moved`));
  out.unlinkMissing = attempt(() => fs.unlinkSync(`${dir}/moved`));
  out.statMissing = attempt(() => fs.statSync(`${dir}/missing`));
  out.openMissing = attempt(() => fs.openSync(`${dir}/missing/x`, 'r'));
  out.readFileMissing = attempt(() => fs.readFileSync(`${dir}/missing`, 'utf8'));
  out.readdirMissing = attempt(() => fs.readdirSync(`${dir}/missing`));
  out.renameMissing = attempt(() => fs.renameSync(`${dir}/missing`, `${dir}/other`));
  out.noFollow = attempt(() => {
    const fd = fs.openSync(`${dir}/plain`, 'r');
    fs.closeSync(fd);
    return fs.openSync('/proc/self/exe', fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  });
  out.charDevice = attempt(() => {
    const fd = fs.openSync('/dev/null', 'a+');
    const k = kind(fs.fstatSync(fd));
    fs.closeSync(fd);
    return k;
  });
  out.directoryFsync = attempt(() => {
    const fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
    fs.closeSync(fd);
  });
  out.closeClosed = attempt(() => fs.closeSync(987654));
  return out;
}

if (process.versions.bun && process.argv[2]) {
  process.stdout.write(JSON.stringify(runScenario(process.argv[2])));
}
