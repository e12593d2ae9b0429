/**
 * The version-skew rule between ferry-cni and ferryd (docs/architecture.md, "Version skew").
 *
 * Everything the two exchange (the socket API, commit-journal entries, delete-queue entries) is one
 * numbered API, FERRY_API_VERSION, raised by any change that the other side's previous release would
 * misread. ferry-cni sends its number with every request (FERRY_API_HEADER) and ferryd sends its own
 * with every answer; each side checks the other's by this one rule before it uses what it got: ferryd
 * refuses a request outside the rule before reading it, the shim refuses such an answer.
 *
 * The rule: ferryd must be of the same API version as ferry-cni or one newer. A ferryd keeps serving
 * the previous API version for one release (the ferry-cni execs of the old release still in flight
 * while a DaemonSet rolls out), and never serves a newer one (it cannot know what a newer shim means).
 * No zod and no import: the shim checks every answer with it.
 */

/** The API version this build speaks. Versions start at 1, the first release. */
export const FERRY_API_VERSION = 1;

/** The HTTP header that carries it, both ways (lower case, as both sides' parsers give names). */
export const FERRY_API_HEADER = 'ferry-api';

/** The version a header states, or undefined when it states none (absent, repeated, not a number). */
export function parseApiVersion(header: string | readonly string[] | undefined): number | undefined {
  return typeof header === 'string' && /^[1-9][0-9]{0,5}$/.test(header) ? Number(header) : undefined;
}

/**
 * Why a ferry-cni of API `shimApi` and a ferryd of API `ferrydApi` do not work together, or undefined
 * when the rule allows the pair. The words name both versions and what to do.
 */
export function apiSkewOf(shimApi: number | undefined, ferrydApi: number | undefined): string | undefined {
  if (shimApi !== undefined && ferrydApi !== undefined && (ferrydApi === shimApi || ferrydApi === shimApi + 1)) {
    return undefined;
  }
  const pair = `ferry-cni speaks API ${shimApi ?? '(none stated)'}, ferryd API ${ferrydApi ?? '(none stated)'}`;
  if (shimApi === undefined || ferrydApi === undefined) {
    return `${pair}: whatever answers or asks on ferryd's socket is not a ferry-cni or ferryd of a Ferry release; install ferry-cni and ferryd from one release`;
  }
  if (ferrydApi < shimApi) {
    return `${pair}: ferryd is older than ferry-cni; finish rolling out the ferryd DaemonSet (each of its pods installs the ferry-cni of its own release), or install the ferry-cni of ferryd's release`;
  }
  return `${pair}: ferry-cni is more than one API version older than ferryd; install the ferry-cni of ferryd's release (ferryctl install --shim, as the ferryd container's postStart hook does)`;
}
