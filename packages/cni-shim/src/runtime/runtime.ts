/**
 * The shim's seam to its runtime. The shipped binary is compiled by Bun, whose own APIs start in a few
 * milliseconds while its Node-compatibility layers (node:http, child_process) cost tens (docs/shipping.md);
 * tests that run sources use Node. Everything that differs between the two lives behind this interface
 * (file calls and locks differ too, chosen by @ferry/files's import conditions).
 */
import type { HttpResponse, InFlight, RequestOptions } from '@ferry/http';
import type { Runner } from '@ferry/net';
import type { RtnlSys } from '@ferry/net/rtnetlink';
import type { Sha256Hex } from '@ferry/shared-types/host-veth';

export interface Runtime {
  /** Spawns a process without a shell (used by @ferry/net). */
  run: Runner;
  /**
   * The system calls of rtnetlink, where the runtime has them (the Bun binary): the links of ADD, CHECK and
   * DEL then change without `ip` execs.
   */
  rtnl?: RtnlSys;
  /**
   * Sends one HTTP request over a unix socket now (@ferry/http's client for this runtime). Never throws:
   * its answer throws UnreachableError when ferryd cannot be reached (the send's own failures included).
   */
  request(opts: RequestOptions): InFlight<HttpResponse>;
  /** SHA-256 for names derived from an attachment (Bun's own hasher: node:crypto costs ~2 ms to load). */
  sha256Hex: Sha256Hex;
}
