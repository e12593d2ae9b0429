import { CniError, Code } from '@ferry/shared-types/errors';

/**
 * What went wrong, as the kernel's errno (rtnetlink) or the tool's output (iproute2, nft) said it. Callers
 * branch on this, never on a message; Ip turns the kinds that mean "not there" into values.
 */
export type NetErrorKind =
  /** EEXIST: the link name, address or route is taken. */
  | 'exists'
  /** ENODEV: no link of the name the request gave (iproute2: `Cannot find device`). */
  | 'no-device'
  /** ENOENT, ESRCH: the kernel has no such route, neighbour or forwarding entry (nft: no such table). */
  | 'not-found'
  /** ENETUNREACH, EHOSTUNREACH: no route to the destination. */
  | 'unreachable'
  /**
   * There is no network namespace at a path the request needs (the one it runs in, or one a line names):
   * nothing is there (ENOENT on open: a pod's netns that was deleted), or what is there is not a network
   * namespace (EINVAL from setns: a file a runtime left after unmounting the netns). Only the step that
   * opens or enters the namespace says this; an ENOENT or EINVAL the kernel answers a request with does not.
   */
  | 'no-netns'
  /** The output of a show did not have the shape Ferry reads (its schema names the field). */
  | 'bad-output'
  /** Anything else; the message says what. */
  | 'failed';

/**
 * A change or a read of the kernel's network state failed. Code NetlinkFailure (the shim prints it as
 * CNI error 103); the message is "action object: reason", the reason being the kernel's strerror or the
 * tool's own words.
 */
export class NetError extends CniError {
  readonly kind: NetErrorKind;
  /** For a batch: the index of the line that failed (the lines before it took effect). */
  readonly failedLine: number | undefined;
  /** The command that failed, when it was a process (iproute2, nft); undefined over rtnetlink. */
  readonly argv: readonly string[] | undefined;

  constructor(
    kind: NetErrorKind,
    action: string,
    reason: string,
    at: { failedLine?: number; argv?: readonly string[] } = {},
  ) {
    super(Code.NetlinkFailure, `${action}: ${reason}`);
    this.name = 'NetError';
    this.kind = kind;
    this.failedLine = at.failedLine;
    this.argv = at.argv;
  }
}

/** True when `err` is a NetError of `kind` (and, with `line`, one that failed on that batch line). */
export function isNetError(err: unknown, kind: NetErrorKind, line?: number): err is NetError {
  return err instanceof NetError && err.kind === kind && (line === undefined || err.failedLine === line);
}

/** The errnos callers tell apart, with glibc's strerror of each (iproute2 and nft print that text). */
const ERRNOS: readonly (readonly [errno: number, strerror: string, kind: NetErrorKind])[] = [
  [2, 'No such file or directory', 'not-found'],
  [3, 'No such process', 'not-found'],
  [17, 'File exists', 'exists'],
  [19, 'No such device', 'no-device'],
  [101, 'Network is unreachable', 'unreachable'],
  [113, 'No route to host', 'unreachable'],
];

/** The kind of the errno the kernel answered a request with. */
export function kindOfErrno(errno: number): NetErrorKind {
  return ERRNOS.find(([n]) => n === errno)?.[2] ?? 'failed';
}

/** The kind of an errno printed as its strerror. */
export function kindOfStrerror(text: string | undefined): NetErrorKind {
  return ERRNOS.find(([, strerror]) => strerror === text)?.[2] ?? 'failed';
}
