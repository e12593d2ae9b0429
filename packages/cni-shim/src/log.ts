/**
 * The shim's log: JSON lines appended to the log file (never stdout, which carries only the CNI
 * result). Hand-written rather than pino: pino's transports and its start-up cost would land on every
 * pod's ADD, and the shim writes a handful of lines per run. A log that cannot be written is dropped
 * silently: logging must never fail a CNI command.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DEFAULT_SHIM_LOG_FILE } from '@ferry/shared-types/config/defaults';

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
}

export function openLog(file = DEFAULT_SHIM_LOG_FILE, level: Level = 'info'): Logger {
  const state = { file, level, dirMade: false };
  const write = (
    lvl: Exclude<Level, 'silent'>,
    base: Record<string, unknown>,
    fields: Record<string, unknown>,
    msg: string,
  ) => {
    if (RANK[lvl] < RANK[state.level]) return;
    // `ms` is time since the process started: where a slow ADD spent its time, line by line.
    const ms = Math.round(performance.now() * 10) / 10;
    const line = `${JSON.stringify({ time: new Date().toISOString(), level: lvl, pid: process.pid, ms, ...base, ...serialise(fields), msg })}\n`;
    try {
      appendFileSync(state.file, line);
    } catch {
      if (state.dirMade) return;
      state.dirMade = true;
      try {
        mkdirSync(dirname(state.file), { recursive: true, mode: 0o750 });
        appendFileSync(state.file, line);
      } catch {
        // Logging must never fail the command.
      }
    }
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
  });
  return make({});
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
