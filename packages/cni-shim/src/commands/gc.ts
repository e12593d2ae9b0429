/**
 * GC (CNI 1.1): ferryd releases every attachment of this network that is not listed valid (libcni
 * sends both `cni.dev/valid-attachments` and the older `cni.dev/attachments`); the shim deletes the
 * host veths of what was released. Errors do not stop it; they are all reported at the end.
 */
import { SELF } from '@ferry/net';
import { containerIdProblem, ifNameProblem } from '@ferry/shared-types/cni/validate';
import { CniError, Code } from '@ferry/shared-types/errors';
import type { ShimConf } from '../config';
import type { Deps } from '../deps';
import type { CmdArgs } from '../env';

export async function cmdGc(_args: CmdArgs, conf: ShimConf, deps: Deps): Promise<undefined> {
  const listed = conf['cni.dev/valid-attachments'] ?? conf['cni.dev/attachments'];
  // Without the list, "nothing is valid" would release every pod of the network: only an explicit []
  // says that.
  if (listed === undefined) {
    throw new CniError(
      Code.InvalidConfig,
      'invalid network config: GC needs cni.dev/valid-attachments (or cni.dev/attachments)',
    );
  }
  // An ID Ferry would never have accepted cannot name one of its attachments.
  const valid = listed
    .filter((a) => !containerIdProblem(a.containerID) && !ifNameProblem(a.ifname))
    .map((a) => ({ containerId: a.containerID, ifName: a.ifname }));
  const r = await deps.daemon.gc({ network: conf.name, validAttachments: valid });
  const stateErrors = r.errors.map((e) => `${e.containerId}/${e.ifName}: ${e.msg}`);
  const linkErrors: string[] = [];
  for (const rec of r.removed) {
    if (!rec.hostVethName) continue;
    try {
      await deps.ip.deleteLink(SELF, rec.hostVethName);
    } catch (err) {
      linkErrors.push(`${rec.containerId}/${rec.ifName}: ${(err as Error).message}`);
    }
  }
  const errors = [...stateErrors, ...linkErrors];
  deps.log.info({ removed: r.removed.length, errors: errors.length }, 'garbage collected');
  if (errors.length > 0) {
    // ferryd's failures (its store) are not netlink ones: code 103 only when iproute2 alone failed.
    throw new CniError(
      stateErrors.length > 0 ? Code.Internal : Code.NetlinkFailure,
      `gc network "${conf.name}": ${errors.length} attachments not fully removed`,
      errors.join('; '),
    );
  }
  return undefined;
}
