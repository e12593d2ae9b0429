/**
 * The pod's own readiness as its ferryd writes it (ferryd's `--ready-file`: the socket's inode, present
 * only while that ferryd serves the socket). During a rollout with surge both pods reach whichever ferryd
 * serves the socket, so the socket alone cannot say whether it is this pod's.
 */
import { lstatSync, readFileSync } from 'node:fs';

/** Why the socket is not served by the ferryd that writes `readyFile`; undefined when it is. */
export function notServedBy(readyFile: string, socket: string): string | undefined {
  let written: string;
  try {
    written = readFileSync(readyFile, 'utf8').trim();
  } catch {
    return `${readyFile} is absent: this pod's ferryd does not serve ${socket} (yet, or any more)`;
  }
  let inode: number;
  try {
    inode = lstatSync(socket).ino;
  } catch (err) {
    return `${socket}: ${(err as Error).message}`;
  }
  return written === String(inode)
    ? undefined
    : `${socket} is served by another ferryd than the one writing ${readyFile}`;
}

/** Waits until the ferryd writing `readyFile` serves `socket`; the last reason when `waitMs` runs out. */
export async function untilServedBy(readyFile: string, socket: string, waitMs: number): Promise<string | undefined> {
  const until = Date.now() + waitMs;
  for (;;) {
    const why = notServedBy(readyFile, socket);
    if (why === undefined || Date.now() >= until) return why;
    await new Promise((r) => setTimeout(r, 50));
  }
}
