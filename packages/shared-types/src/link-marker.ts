/**
 * The markers Ferry puts on the links it makes or moves, so the node itself can say what each one is
 * (docs/architecture.md, "The node is the second source of truth"). One grammar for all of them, in the link's
 * alias (IFLA_IFALIAS, at most 255 bytes): `ferry:` then `key=value` words separated by one space, a
 * value without spaces, except `ns=`, which comes last and runs to the end (a netns path). Readers take
 * the keys they know and ignore the rest, so a marker can grow keys without breaking an older reader.
 *
 * - A host veth (on the node: only root there can write it, so ferryd trusts it):
 *   `ferry:gen=<generation> net=<network> if=<CNI_IFNAME> ctr=<containerId> ns=<netns>`.
 * - A delegated device (in the pod, whose root can rewrite it: never trusted for more than which
 *   attachment of that pod it belongs to): `ferry:host-ifname=<name on the node> attachment=<CNI_IFNAME>`,
 *   and the link group DELEGATED_GROUP, which an app overwriting the alias rarely touches. A secondary
 *   network's device is its attachment (no host veth names it), so its marker adds the attachment's key
 *   and generation when they fit: `... gen=<generation> net=<network> ctr=<containerId>`.
 *
 * No zod and no I/O: the shim reads device markers on its hot paths.
 */
import { containerIdProblem, ifNameProblem, networkNameProblem } from './cni/validate';

const PREFIX = 'ferry:';
/** IFALIASZ is 256 bytes with the terminating NUL. */
export const MAX_ALIAS_BYTES = 255;
/** "FRRY": the link group of a delegated device while it is in a pod. */
export const DELEGATED_GROUP = 0x46525259;

/** A marker's words, `ns` included; undefined when the alias is no Ferry marker or is malformed. */
function fieldsOf(alias: string | undefined): Map<string, string> | undefined {
  if (!alias?.startsWith(PREFIX)) return undefined;
  const body = alias.slice(PREFIX.length);
  const at = body.indexOf(' ns=');
  const head = at < 0 ? body : body.slice(0, at);
  const fields = new Map<string, string>();
  for (const word of head === '' ? [] : head.split(' ')) {
    const eq = word.indexOf('=');
    if (eq <= 0 || eq === word.length - 1 || fields.has(word.slice(0, eq))) return undefined;
    fields.set(word.slice(0, eq), word.slice(eq + 1));
  }
  if (at >= 0) fields.set('ns', body.slice(at + 4));
  return fields;
}

const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;

/** A secondary network's attachment as its device's marker names it. */
export interface AttachmentKey {
  generation: number;
  network: string;
  containerId: string;
}

/** What a delegated device's marker says: its name on the node and the attachment that took it. */
export interface Marker {
  hostIfName: string;
  attachmentIfName: string;
  /** A secondary network's device only (it is the attachment): the attachment's key and generation. */
  attachment?: AttachmentKey;
}

/** A delegated device's marker; with `attachment` (a secondary network's device) when it fits 255 bytes. */
export function markerOf(hostIfName: string, attachmentIfName: string, attachment?: AttachmentKey): string {
  const marker = `${PREFIX}host-ifname=${hostIfName} attachment=${attachmentIfName}`;
  if (!attachment) return marker;
  const keyed = `${marker} gen=${attachment.generation} net=${attachment.network} ctr=${attachment.containerId}`;
  return utf8Bytes(keyed) <= MAX_ALIAS_BYTES ? keyed : marker;
}

/** What a delegated device's marker says, or undefined when the alias is not one. */
export function parseMarker(alias: string | undefined): Marker | undefined {
  const f = fieldsOf(alias);
  const hostIfName = f?.get('host-ifname');
  const attachmentIfName = f?.get('attachment');
  if (!f || !hostIfName || !attachmentIfName || ifNameProblem(hostIfName) || ifNameProblem(attachmentIfName))
    return undefined;
  const attachment = attachmentKeyOf(f);
  return { hostIfName, attachmentIfName, ...(attachment ? { attachment } : {}) };
}

/** gen=, net= and ctr= together and valid, or undefined. */
function attachmentKeyOf(f: Map<string, string>): AttachmentKey | undefined {
  const generation = generationOf(f.get('gen'));
  const network = f.get('net');
  const containerId = f.get('ctr');
  if (generation === undefined || network === undefined || containerId === undefined) return undefined;
  if (networkNameProblem(network) || containerIdProblem(containerId)) return undefined;
  return { generation, network, containerId };
}

function generationOf(gen: string | undefined): number | undefined {
  if (!gen || !/^[1-9][0-9]{0,15}$/.test(gen)) return undefined;
  const generation = Number(gen);
  return Number.isSafeInteger(generation) ? generation : undefined;
}

/** An InfraNIC's attachment as its host veth's marker names it. */
export interface HostVethMarker {
  generation: number;
  ifName: string;
  /** With `containerId`; both are left out when they do not fit the alias (their sum can pass 500 bytes). */
  network?: string;
  containerId?: string;
  /** The pod's netns path; left out when it does not fit, or holds what a batch word cannot carry. */
  netns?: string;
}

/** A netns path a marker can carry: absolute, and nothing `ip -batch` would cut or a reader would split on. */
function isMarkableNetns(p: string): boolean {
  if (!p.startsWith('/')) return false;
  for (let i = 0; i < p.length; i++) {
    const c = p.charCodeAt(i);
    if (c < 0x20 || c === 0x7f || c === 0x22 /* " */ || c === 0x23 /* # */) return false;
  }
  return true;
}

/**
 * The host veth's marker: every field that fits in 255 bytes, the attachment's key before the netns (the
 * key is what a DEL releases by; a netns can be found from the veth's peer), the generation always.
 */
export function hostVethMarkerOf(m: Required<HostVethMarker>): string {
  const short = `${PREFIX}gen=${m.generation} if=${m.ifName}`;
  const keyed = `${PREFIX}gen=${m.generation} net=${m.network} if=${m.ifName} ctr=${m.containerId}`;
  const full = `${keyed} ns=${m.netns}`;
  if (isMarkableNetns(m.netns) && utf8Bytes(full) <= MAX_ALIAS_BYTES) return full;
  return utf8Bytes(keyed) <= MAX_ALIAS_BYTES ? keyed : short;
}

/** What a host veth's marker says, or undefined when the alias is not one (or any field is not valid). */
export function parseHostVethMarker(alias: string | undefined): HostVethMarker | undefined {
  const f = fieldsOf(alias);
  const generation = generationOf(f?.get('gen'));
  const ifName = f?.get('if');
  if (!f || generation === undefined || !ifName || ifNameProblem(ifName)) return undefined;
  const network = f.get('net');
  const containerId = f.get('ctr');
  if ((network === undefined) !== (containerId === undefined)) return undefined;
  if (network !== undefined && (networkNameProblem(network) || containerIdProblem(containerId ?? ''))) return undefined;
  const netns = f.get('ns');
  if (netns !== undefined && !isMarkableNetns(netns)) return undefined;
  return {
    generation,
    ifName,
    ...(network !== undefined && containerId !== undefined ? { network, containerId } : {}),
    ...(netns !== undefined ? { netns } : {}),
  };
}
