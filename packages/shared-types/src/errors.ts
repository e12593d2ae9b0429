/**
 * The one catalog of error codes Ferry can emit. Spec codes keep their numbers (SPEC.md §5 "Error"),
 * Ferry's own start at 100. Every CNI error printed by ferry-cni and every error body sent by ferryd
 * carries one of these codes. No zod here (api/error.ts has the schema), so code that only reports
 * errors builds no schema.
 */
export const Code = {
  /** The config's cniVersion is not one ferry-cni supports, or the command needs a newer version. */
  IncompatibleVersion: 1,
  /** A config field holds a value Ferry does not support (the message names key and value). */
  UnsupportedField: 2,
  /** The container is unknown; the runtime needs no cleanup. */
  UnknownContainer: 3,
  /** A CNI_* variable is missing or invalid (the message names every one). */
  InvalidEnv: 4,
  /** Reading stdin or another local file failed. */
  IoFailure: 5,
  /** stdin (or a daemon body) is not the JSON it must be. */
  DecodeFailure: 6,
  /** The network config (or a request body) is invalid; the message names the field. */
  InvalidConfig: 7,
  /** CNI_NETNS is the plugin's own network namespace. */
  InvalidNetns: 8,
  /** Transient: ferryd is unreachable, starting or shutting down. The runtime should retry. */
  TryAgainLater: 11,
  /** STATUS: the plugin cannot serve ADD (ferryd unreachable or not ready, or the pool is exhausted). */
  NotAvailable: 50,
  /** STATUS: not available and existing pods may have limited connectivity (forwarding is off on the node). */
  LimitedConnectivity: 51,
  /** The network's pool has no free address in a family it serves; nothing was assigned. */
  PoolExhausted: 100,
  /** The network name is not configured in ferryd. */
  UnknownNetwork: 101,
  /** ADD: CNI_IFNAME already exists in the pod's network namespace (a spec MUST). */
  InterfaceExists: 102,
  /** A change or read of links, addresses or routes failed (rtnetlink or iproute2); the kernel's reason. */
  NetlinkFailure: 103,
  /** ferryd holds no endpoint for that container (the shim treats it as "nothing to tear down"). */
  EndpointNotFound: 104,
  /** The request conflicts with stored state (e.g. the attachment belongs to another network, or a stale generation). */
  AttachmentConflict: 105,
  /** A delegated device was asked for but none (or not the pre-assigned one) is free. */
  DeviceUnavailable: 106,
  /** DEL: a delegated device's original host name is taken on the host; retry once it is free. */
  DeviceNameTaken: 107,
  /** The NIC type is recognised but not supported (BackendNIC). */
  UnsupportedNicType: 108,
  /** CHECK found the live state different from prevResult or from ferryd's record. */
  CheckFailed: 109,
  /** DEL with ferryd unreachable: the delete queue is full, so the runtime must retry. */
  QueueFull: 110,
  /** ferryd answered with something that is not its API (wrong shape or status). */
  DaemonProtocol: 111,
  /** Operator API: missing or wrong bearer token. */
  Unauthorized: 112,
  /** Operator API: the token is read-only and the request changes state. */
  Forbidden: 113,
  /** ferryd: the requested object (route, entry, device) does not exist. */
  NotFound: 114,
  /**
   * ferryd could not write its database or a file it keeps (disk full, read-only filesystem, I/O error);
   * the message names the path and the cause. Transient: ferry-cni reports it to the runtime as 11 (try
   * again later) with ferryd's message, and queues a DEL instead when the delete queue can be written.
   */
  StorageFailure: 115,
  /**
   * A pod's `ferry.dev/nics` annotation does not parse, or asks for what its namespace may not have; the
   * message names the pod, the annotation and the problem (the kubelet shows it in the pod's events).
   */
  InvalidPodIntent: 116,
  /**
   * ferry-cni and ferryd speak API versions outside the version-skew rule (api/version.ts): ferryd is
   * older than the shim, or more than one version newer. The message names both versions and what to do.
   */
  ApiVersionSkew: 117,
  /** Anything unexpected; the cause is in the log with its stack. */
  Internal: 999,
} as const;
export type Code = (typeof Code)[keyof typeof Code];

const KNOWN_CODES = new Set<number>(Object.values(Code));
/** True when `n` is one of the catalog's codes. */
export function isCode(n: number): n is Code {
  return KNOWN_CODES.has(n);
}

/**
 * A CNI-shaped error. Across a process boundary (stdout, HTTP) branch on `code`, never on
 * `instanceof`: an error that went through JSON is no longer this class.
 */
export class CniError extends Error {
  readonly code: Code;
  readonly details: string;
  constructor(code: Code, message: string, details = '', options?: ErrorOptions) {
    super(message, options);
    this.name = 'CniError';
    this.code = code;
    this.details = details;
  }
}

/**
 * The `details` of ferryd's code 11 for a pod it could not look up in time (the Kubernetes API away or
 * refusing): ferryd itself is ready, so ferry-cni hands the error to the runtime to retry, where for a
 * ferryd that is not ready it waits and asks again (which here would only look the pod up a second time).
 */
export const POD_LOOKUP_FAILED = 'ferryd is ready; the pod could not be looked up in the Kubernetes API';

/** The wire shape of an error: what ferryd sends and what ferry-cni prints (plus cniVersion). */
export interface CniErrorBody {
  cniVersion?: string;
  code: number;
  msg: string;
  details?: string;
}

/** Serialises an error for stdout or an HTTP body, dropping an empty `details` as the Go types do. */
export function toErrorBody(err: CniError, cniVersion?: string): CniErrorBody {
  return {
    ...(cniVersion ? { cniVersion } : {}),
    code: err.code,
    msg: err.message,
    ...(err.details ? { details: err.details } : {}),
  };
}

/**
 * Runs a file system step; its failure (ENOENT, ENOSPC, EROFS, EACCES…) becomes code 5 naming what was being
 * done, never a stack trace. A CniError passes unchanged: it already says what failed.
 */
export function onFile<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof CniError) throw err;
    const e = err as { code?: unknown; message?: unknown };
    const reason = typeof e.code === 'string' ? e.code : String(e.message);
    throw new CniError(Code.IoFailure, `${what}: ${reason}`, '', { cause: err });
  }
}
