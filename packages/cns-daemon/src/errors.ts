/**
 * HTTP statuses for every catalog code. `satisfies Record<Code, number>` makes a new code fail to
 * compile until it has a status here.
 */
import { Code } from '@ferry/shared-types/errors';

const STATUS_BY_NAME = {
  IncompatibleVersion: 400,
  UnsupportedField: 400,
  UnknownContainer: 404,
  InvalidEnv: 400,
  IoFailure: 500,
  DecodeFailure: 400,
  InvalidConfig: 400,
  InvalidNetns: 400,
  TryAgainLater: 503,
  NotAvailable: 503,
  LimitedConnectivity: 503,
  PoolExhausted: 409,
  UnknownNetwork: 404,
  InterfaceExists: 409,
  NetlinkFailure: 500,
  EndpointNotFound: 404,
  AttachmentConflict: 409,
  DeviceUnavailable: 409,
  DeviceNameTaken: 409,
  UnsupportedNicType: 400,
  CheckFailed: 409,
  QueueFull: 503,
  DaemonProtocol: 500,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  StorageFailure: 503,
  InvalidPodIntent: 400,
  ApiVersionSkew: 400,
  Internal: 500,
} as const satisfies Record<keyof typeof Code, number>;

const STATUS_BY_CODE = new Map<number, number>(
  Object.entries(STATUS_BY_NAME).map(([name, status]) => [Code[name as keyof typeof Code], status]),
);

/** The HTTP status ferryd answers a CniError with. */
export function httpStatusOf(code: Code): number {
  return STATUS_BY_CODE.get(code) ?? 500;
}

/** ferryd cannot start: the message says what to fix. main.ts prints it and exits 1. */
export class StartupError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StartupError';
  }
}
