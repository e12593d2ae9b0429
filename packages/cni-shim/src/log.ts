/**
 * The shim's log: JSON lines appended to the log file (never stdout, which carries only the CNI
 * result). Hand-written rather than pino: pino's transports and its start-up cost would land on every
 * pod's ADD, and the shim writes a handful of lines per run. A log that cannot be written is dropped
 * silently: logging must never fail a CNI command.
 */
import { closeSync, mkdirSync, openSync, writeSync } from '@ferry/files/fs';
import { dirnameOf } from '@ferry/files/paths';
import {
  DEFAULT_SHIM_LOG_FILE,
  DEFAULT_SHIM_LOG_MAX_BACKUPS,
  DEFAULT_SHIM_LOG_MAX_SIZE_KIB,
} from '@ferry/shared-types/config/defaults';
import { type Rotation, rotateIfFull } from './log-rotation';

export type Level = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const RANK: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

export interface Logger {
  debug(fields: Record<string, unknown>, msg: string): void;
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
  /** A logger whose lines all carry `fields` too (containerId, ifName, command). */
  child(fields: Record<string, unknown>): Logger;
  setLevel(level: Level): void;
  /** Closes the file (the process is done logging). */
  close(): void;
}

export const DEFAULT_ROTATION: Rotation = {
  maxBytes: DEFAULT_SHIM_LOG_MAX_SIZE_KIB * 1024,
  maxBackups: DEFAULT_SHIM_LOG_MAX_BACKUPS,
};

/**
 * The file is opened on the first line (O_APPEND) and every line is one write(2), so lines from shims
 * running at once never mix. After the first line, one look at the size decides on rotation
 * (log-rotation.ts); a run writes a handful of lines, so the file overshoots the cap by at most that.
 */
export function openLog(file = DEFAULT_SHIM_LOG_FILE, level: Level = 'info', rotation = DEFAULT_ROTATION): Logger {
  const state: { level: Level; fd: number | undefined; isBroken: boolean; isSizeChecked: boolean } = {
    level,
    fd: undefined,
    isBroken: false,
    isSizeChecked: false,
  };
  const open = (): number | undefined => {
    try {
      return openSync(file, 'a');
    } catch {
      try {
        mkdirSync(dirnameOf(file), { recursive: true, mode: 0o750 });
        return openSync(file, 'a');
      } catch {
        state.isBroken = true;
        return undefined;
      }
    }
  };
  const append = (line: string) => {
    if (state.isBroken) return;
    state.fd ??= open();
    if (state.fd === undefined) return;
    try {
      writeSync(state.fd, line);
    } catch {
      // Logging must never fail the command.
      return;
    }
    if (state.isSizeChecked) return;
    state.isSizeChecked = true;
    if (rotateIfFull(state.fd, file, rotation)) {
      // This run's next lines go to the fresh file; the moved one is complete.
      closeQuietly(state.fd);
      state.fd = undefined;
    }
  };
  const write = (
    lvl: Exclude<Level, 'silent'>,
    base: Record<string, unknown>,
    fields: Record<string, unknown>,
    msg: string,
  ) => {
    if (RANK[lvl] < RANK[state.level]) return;
    // `ms` is time since the process started: where a slow ADD spent its time, line by line.
    const ms = Math.round(performance.now() * 10) / 10;
    append(
      `${JSON.stringify({ time: new Date().toISOString(), level: lvl, pid: process.pid, ms, ...base, ...serialise(fields), msg })}\n`,
    );
  };
  const make = (base: Record<string, unknown>): Logger => ({
    debug: (f, m) => write('debug', base, f, m),
    info: (f, m) => write('info', base, f, m),
    warn: (f, m) => write('warn', base, f, m),
    error: (f, m) => write('error', base, f, m),
    child: (f) => make({ ...base, ...f }),
    setLevel(level) {
      state.level = level;
    },
    close() {
      if (state.fd !== undefined) closeQuietly(state.fd);
      state.fd = undefined;
      state.isBroken = true;
    },
  });
  return make({});
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Nothing to do about it, and nothing lost: every line was written whole.
  }
}

/** Errors become { type, message, code, stack } so a line says what failed and where. */
function serialise(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    if (v instanceof Error) {
      out[k] = { type: v.name, message: v.message, code: (v as { code?: unknown }).code, stack: v.stack };
    } else out[k] = v;
  }
  return out;
}
