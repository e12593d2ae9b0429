/**
 * The temp files writers leave in a shared directory (the delete queue, the commit journal) when they die
 * between write and rename: their readers skip them as writes in progress and remove them once abandoned.
 * ferryd's side only: node:fs (lstat, so a link is judged by itself, never by what it points at).
 */
import { lstatSync, unlinkSync } from 'node:fs';
import { SHARED_TEMP_PREFIX } from './atomic';
import { joinName } from './paths';

/** A temp file this old was abandoned: no write takes a minute. */
export const ABANDONED_TEMP_MS = 60_000;

/** Whether `name` is a writer's temp file (written with SHARED_TEMP_PREFIX), in progress or abandoned. */
export const isTempFile = (name: string): boolean => name.startsWith(SHARED_TEMP_PREFIX);

/** Removes the temp file `name` from `dir` if it was last written more than ABANDONED_TEMP_MS before `nowMs`. */
export function removeIfAbandoned(dir: string, name: string, nowMs: number): void {
  if (!isTempFile(name)) return;
  const path = joinName(dir, name);
  try {
    if (nowMs - lstatSync(path).mtimeMs > ABANDONED_TEMP_MS) unlinkSync(path);
  } catch {
    // Renamed or removed meanwhile; anything else is for the next pass to meet again.
  }
}
