import { closeSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, onTestFinished, test } from 'vitest';
import { openLog } from './log';
import { backupNameOf, backupsOf, rotateIfFull } from './log-rotation';

function useLogFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-t-log-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'cni.log');
}

/** The file at `file`, opened for appending as a shim holds it, with `bytes` written. */
function useHeldFile(file: string, bytes: number): number {
  const fd = openSync(file, 'a');
  onTestFinished(() => closeSync(fd));
  writeSync(fd, 'x'.repeat(bytes));
  return fd;
}

const AT = new Date('2026-11-30T23:18:06.123Z');

test('backup names sort by time and name their process', () => {
  expect(backupNameOf('/var/log/ferry/cni.log', AT, 4242)).toBe('/var/log/ferry/cni.log.20261130T231806.123Z-4242');
  const later = backupNameOf('/l/cni.log', new Date('2026-12-01T00:00:00.000Z'), 1);
  expect([later, backupNameOf('/l/cni.log', AT, 99999)].sort()[1]).toBe(later);
});

test('a file at or under the cap stays; past it, it is moved aside under a new name', () => {
  const file = useLogFile();
  const fd = useHeldFile(file, 100);
  expect(rotateIfFull(fd, file, { maxBytes: 100, maxBackups: 3 }, AT)).toBe(false);
  expect(backupsOf(file)).toEqual([]);
  writeSync(fd, 'y');
  expect(rotateIfFull(fd, file, { maxBytes: 100, maxBackups: 3 }, AT)).toBe(true);
  expect(backupsOf(file)).toEqual([backupNameOf(file, AT, process.pid)]);
  expect(() => readFileSync(file)).toThrow(/ENOENT/);
  // The holder's later writes land in the moved file: nothing lost.
  writeSync(fd, 'z');
  expect(readFileSync(backupNameOf(file, AT, process.pid), 'utf8')).toBe(`${'x'.repeat(100)}yz`);
});

test('maxBytes 0 never rotates', () => {
  const file = useLogFile();
  const fd = useHeldFile(file, 5000);
  expect(rotateIfFull(fd, file, { maxBytes: 0, maxBackups: 3 }, AT)).toBe(false);
  expect(readFileSync(file, 'utf8')).toHaveLength(5000);
});

test('a file another shim already moved is not rotated again: the fresh file at the path stays', () => {
  const file = useLogFile();
  const fd = useHeldFile(file, 200);
  // Another shim rotated it, and a third started the fresh file.
  renameSync(file, `${file}.20261130T000000.000Z-1`);
  writeFileSync(file, 'fresh\n');
  expect(rotateIfFull(fd, file, { maxBytes: 100, maxBackups: 3 }, AT)).toBe(false);
  expect(readFileSync(file, 'utf8')).toBe('fresh\n');
  expect(backupsOf(file)).toEqual([`${file}.20261130T000000.000Z-1`]);
});

test('the oldest backups beyond maxBackups are deleted; other files in the folder are not', () => {
  const file = useLogFile();
  const old = ['20261101T000000.000Z-7', '20261102T000000.000Z-8', '20261103T000000.000Z-9'];
  for (const s of old) writeFileSync(`${file}.${s}`, 'old\n');
  for (const other of [`${file}.1`, `${file}.keep`, join(file, '..', 'other.log')]) writeFileSync(other, 'x');
  const fd = useHeldFile(file, 200);
  expect(rotateIfFull(fd, file, { maxBytes: 100, maxBackups: 2 }, AT)).toBe(true);
  expect(backupsOf(file)).toEqual([`${file}.${old[2]}`, backupNameOf(file, AT, process.pid)]);
  for (const other of [`${file}.1`, `${file}.keep`, join(file, '..', 'other.log')]) {
    expect(readFileSync(other, 'utf8')).toBe('x');
  }
});

test('the logger checks the size once, after its first line, and goes on in the fresh file', () => {
  const file = useLogFile();
  writeFileSync(file, `${'x'.repeat(2000)}\n`);
  const log = openLog(file, 'info', { maxBytes: 1024, maxBackups: 2 });
  onTestFinished(() => log.close());
  log.info({ n: 1 }, 'first');
  log.info({ n: 2 }, 'second');
  const [backup] = backupsOf(file);
  expect(backup).toBeDefined();
  const moved = readFileSync(backup as string, 'utf8').split('\n');
  expect(moved[0]).toBe('x'.repeat(2000));
  expect(JSON.parse(moved[1] as string)).toMatchObject({ msg: 'first', n: 1 });
  const fresh = readFileSync(file, 'utf8').trimEnd().split('\n');
  expect(fresh.map((l) => JSON.parse(l).msg)).toEqual(['second']);
  // Once per run: this logger does not look again, however much it writes.
  for (let i = 0; i < 50; i++) log.info({ i }, 'x'.repeat(100));
  expect(backupsOf(file)).toHaveLength(1);
});

test('a log that cannot be opened is dropped silently', () => {
  const file = useLogFile();
  writeFileSync(join(file, '..', 'blocker'), '');
  const log = openLog(join(file, '..', 'blocker', 'cni.log'));
  expect(() => log.error({}, 'nowhere to go')).not.toThrow();
  log.close();
});
