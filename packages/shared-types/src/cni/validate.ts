/**
 * Validators for the names the CNI spec constrains. They matter beyond the spec: container IDs and
 * network names reach file names (the delete queue, logs), so anything outside the spec's character
 * set is refused before it can become a path. No zod here: the shim's environment checks run before
 * any schema is built (cni/names.ts has the zod forms).
 */
/** pkg/utils ValidateContainerID: starts alphanumeric, then alphanumerics, `_`, `.`, `-`. */
export const CONTAINER_ID_RE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
/** Container IDs are 64 hex chars from containerd/CRI-O; cap them so they stay usable as file names. */
export const MAX_CONTAINER_ID_LENGTH = 255;
/** IFNAMSIZ is 16 including the terminating NUL. */
export const MAX_IFNAME_BYTES = 15;

/** Returns why `id` is not a valid container ID, or undefined when it is. */
export function containerIdProblem(id: string): string | undefined {
  if (id === '') return 'is empty';
  if (id.length > MAX_CONTAINER_ID_LENGTH) return `is longer than ${MAX_CONTAINER_ID_LENGTH} characters`;
  if (!CONTAINER_ID_RE.test(id)) return 'must match ^[a-zA-Z0-9][a-zA-Z0-9_.\\-]*$';
  return undefined;
}

/** Bytes of `s` in UTF-8; ASCII (every usual name) without encoding it, as ferryd checks several per request. */
function utf8Length(s: string): number {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return new TextEncoder().encode(s).length;
  return s.length;
}

/** Returns why `name` is not a valid interface name (pkg/utils ValidateInterfaceName), or undefined. */
export function ifNameProblem(name: string): string | undefined {
  if (name === '') return 'is empty';
  if (utf8Length(name) > MAX_IFNAME_BYTES) return `is longer than ${MAX_IFNAME_BYTES} bytes`;
  if (name === '.' || name === '..') return `cannot be "${name}"`;
  if (/[/:\s]/u.test(name)) return 'cannot contain "/", ":" or whitespace';
  return undefined;
}

/** Returns why `name` is not a valid network name, or undefined: the container ID's rules. */
export const networkNameProblem = containerIdProblem;
