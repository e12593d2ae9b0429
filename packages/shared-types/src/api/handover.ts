/**
 * POST /v1/handover — a new ferryd takes over from the one serving the node (a DaemonSet rollout with
 * surge: docs/architecture.md, "Upgrades"). The old one answers once it has stopped taking new work
 * (requests that arrive are held, never refused), finished what was in flight and closed the database and
 * its lock; it then proxies the held requests to the new one as soon as the new one's socket is renamed
 * over the path. Refused (code 105) when the new ferryd could not serve what the old one serves: a
 * database schema older than the one on disk (a downgrade must not eat it), or an API version
 * (FERRY_API_VERSION, api/version.ts) whose version-skew rule leaves out the shims on the node (held and
 * in-flight requests come from those).
 */
import * as z from 'zod/mini';
import { apiSkewOf } from './version';

const Version = z.number().check(z.int(), z.nonnegative());

export const HandOverRequestSchema = z.strictObject({
  /** The new ferryd's process id (the old one gives up waiting if that process dies before it takes over). */
  pid: z.number().check(z.int(), z.positive()),
  /** The new ferryd's FERRY_API_VERSION (api/version.ts). */
  apiVersion: Version,
  /** The newest database schema the new ferryd understands. */
  schemaVersion: Version,
});
export type HandOverRequest = z.infer<typeof HandOverRequestSchema>;

export const HandOverAnswerSchema = z.strictObject({
  pid: z.number().check(z.int(), z.positive()),
  apiVersion: Version,
  schemaVersion: Version,
  /** How long the old ferryd took to finish its in-flight requests and close the database. */
  releasedInMs: z.number(),
});
export type HandOverAnswer = z.infer<typeof HandOverAnswerSchema>;

/**
 * Why a successor cannot take over, or undefined when it can (the rule both sides apply). The shims on
 * the node are the old ferryd's release's (a pod installs its own ferry-cni only once its ferryd serves:
 * docs/architecture.md, "Version skew"), and the held and in-flight requests come from them: the
 * successor must serve them by the version-skew rule itself.
 */
export function handOverProblem(
  old: { apiVersion: number; schemaVersion: number },
  next: HandOverRequest,
): string | undefined {
  if (next.schemaVersion < old.schemaVersion) {
    return `its database schema ${next.schemaVersion} is older than the database's (${old.schemaVersion}): roll forward instead`;
  }
  const skew = apiSkewOf(old.apiVersion, next.apiVersion);
  return skew === undefined ? undefined : `it would not serve the shims on the node: ${skew}`;
}
