/**
 * The rules of the names the CNI spec constrains, as data: a length limit and patterns, each with the
 * problem it reports. They matter beyond the spec: container IDs and network names reach file names (the
 * delete queue, logs), so anything outside the spec's character set is refused before it can become a
 * path. names.ts makes the zod schemas of these rules, so every rule is one z.toJSONSchema states (and
 * the checks generated from it enforce); the shim's environment check reads them before any schema is
 * built. No zod here.
 */
export interface NameRule {
  maxLength: number;
  /** The problem of a name longer than maxLength. */
  tooLong: string;
  /** Tested in order; the first that does not match gives the problem. */
  patterns: readonly { pattern: RegExp; problem: string }[];
}

/** Container IDs are 64 hex chars from containerd/CRI-O; cap them so they stay usable as file names. */
export const MAX_CONTAINER_ID_LENGTH = 255;

/** pkg/utils ValidateContainerID: starts alphanumeric, then alphanumerics, `_`, `.`, `-`. */
export const CONTAINER_ID_RULE: NameRule = {
  maxLength: MAX_CONTAINER_ID_LENGTH,
  tooLong: `is longer than ${MAX_CONTAINER_ID_LENGTH} characters`,
  patterns: [{ pattern: /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/, problem: 'must match ^[a-zA-Z0-9][a-zA-Z0-9_.\\-]*$' }],
};

/** A network name: the container ID's rules. */
export const NETWORK_NAME_RULE = CONTAINER_ID_RULE;

/**
 * pkg/utils ValidateInterfaceName, in ASCII: IFNAMSIZ (16 with the terminating NUL) counts bytes, and a
 * limit on UTF-8 bytes is no length and no pattern a schema can state, while in ASCII bytes are
 * characters. Linux and libcni would take other UTF-8 up to 15 bytes; no runtime names pod interfaces so.
 */
export const IFNAME_RULE: NameRule = {
  maxLength: 15,
  tooLong: 'is longer than 15 bytes',
  patterns: [
    { pattern: /^(?!\.$)/, problem: 'cannot be "."' },
    { pattern: /^(?!\.\.$)/, problem: 'cannot be ".."' },
    { pattern: /^[^\s/:]*$/, problem: 'cannot contain "/", ":" or whitespace' },
    { pattern: /^[^\u0080-\uffff]*$/, problem: 'must be ASCII' },
  ],
};

/** Returns why `name` breaks `rule`, or undefined when it does not: what the schema of names.ts reports first. */
export function nameProblem(rule: NameRule, name: string): string | undefined {
  if (name === '') return 'is empty';
  if (name.length > rule.maxLength) return rule.tooLong;
  return rule.patterns.find(({ pattern }) => !pattern.test(name))?.problem;
}

/** Returns why `id` is not a valid container ID, or undefined when it is. */
export const containerIdProblem = (id: string) => nameProblem(CONTAINER_ID_RULE, id);
/** Returns why `name` is not a valid interface name, or undefined. */
export const ifNameProblem = (name: string) => nameProblem(IFNAME_RULE, name);
/** Returns why `name` is not a valid network name, or undefined. */
export const networkNameProblem = (name: string) => nameProblem(NETWORK_NAME_RULE, name);
