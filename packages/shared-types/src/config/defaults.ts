/**
 * Defaults the shim, ferryd and ferryctl must agree on, in one place: the config reference generated
 * from the schemas quotes these same values, so the docs say what the code does. No zod here: the shim
 * loads this on every run.
 */
export const DEFAULT_SOCKET = '/run/ferry/ferryd.sock';
export const DEFAULT_DELETE_QUEUE = '/var/lib/ferry/delete-queue';
export const DEFAULT_DELETE_QUEUE_LIMIT = 1024;

/**
 * The commit journal's directory when none is configured: `commit-journal` next to the delete queue, so
 * a shim and a ferryd that agree on `deleteQueue` (as they must) agree on the journal too.
 */
export function defaultCommitJournalOf(deleteQueue: string): string {
  // String operations, not regular expressions: the shim calls this on every ADD, and in its interpreter
  // the first use of a regular expression costs more than the whole function.
  let end = deleteQueue.length;
  while (end > 0 && deleteQueue[end - 1] === '/') end--;
  const cut = deleteQueue.lastIndexOf('/', end - 1);
  return `${cut < 0 ? '' : deleteQueue.slice(0, cut)}/commit-journal`;
}
// Pure: a bundle that does not use it (the shim's) leaves out the call as well.
export const DEFAULT_COMMIT_JOURNAL = /* @__PURE__ */ defaultCommitJournalOf(DEFAULT_DELETE_QUEUE);
export const DEFAULT_SHIM_LOG_FILE = '/var/log/ferry/cni.log';
/**
 * The shim's log is rotated past 10 MiB, five rotated files kept: at most ~60 MiB on a node, whatever
 * its age (a pod's ADD and DEL write ~1 KiB at info, so that is tens of thousands of pods of history).
 */
export const DEFAULT_SHIM_LOG_MAX_SIZE_KIB = 10_240;
export const DEFAULT_SHIM_LOG_MAX_BACKUPS = 5;
/** The largest values the conflist may set (1 GiB; 100 files). */
export const SHIM_LOG_MAX_SIZE_KIB_LIMIT = 1_048_576;
export const SHIM_LOG_MAX_BACKUPS_LIMIT = 100;
/** The shim's time limits for talking to ferryd (the conflist's `daemonTimeouts`). */
export const DEFAULT_DAEMON_TIMEOUTS = {
  connectMs: 1000,
  requestMs: 10_000,
  addWaitMs: 10_000,
  delWaitMs: 5000,
} as const;
