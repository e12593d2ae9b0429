/**
 * CNI_ARGS: `K=V;K=V` (pkg/types/args.go). Unknown keys are an error unless IgnoreUnknown is true,
 * which kubelet always sets.
 */
import { CniError, Code } from '../errors';

/** The CNI_ARGS keys Ferry understands. */
export interface CniArgs {
  ignoreUnknown: boolean;
  podNamespace?: string;
  podName?: string;
  podUid?: string;
  podInfraContainerId?: string;
}

const KNOWN: Record<string, keyof Omit<CniArgs, 'ignoreUnknown'> | 'IgnoreUnknown'> = {
  IgnoreUnknown: 'IgnoreUnknown',
  K8S_POD_NAMESPACE: 'podNamespace',
  K8S_POD_NAME: 'podName',
  K8S_POD_UID: 'podUid',
  K8S_POD_INFRA_CONTAINER_ID: 'podInfraContainerId',
};

function parseBool(key: string, v: string): boolean {
  // UnmarshallableBool accepts 1/true/0/false in any case.
  const l = v.toLowerCase();
  if (l === '1' || l === 'true') return true;
  if (l === '0' || l === 'false') return false;
  throw new CniError(Code.InvalidEnv, `invalid CNI_ARGS: ${key}: "${v}" is not a boolean`);
}

/** Parses CNI_ARGS; throws CniError(InvalidEnv) naming the offending pair. */
export function parseCniArgs(raw: string | undefined): CniArgs {
  const out: CniArgs = { ignoreUnknown: false };
  if (!raw) return out;
  const pairs: [string, string][] = [];
  for (const item of raw.split(';')) {
    if (item === '') continue;
    const eq = item.indexOf('=');
    if (eq <= 0) throw new CniError(Code.InvalidEnv, `invalid CNI_ARGS: pair "${item}" is not K=V`);
    pairs.push([item.slice(0, eq), item.slice(eq + 1)]);
  }
  for (const [k, v] of pairs) if (k === 'IgnoreUnknown') out.ignoreUnknown = parseBool(k, v);
  for (const [k, v] of pairs) {
    const field = KNOWN[k];
    if (field === 'IgnoreUnknown') continue;
    if (field) out[field] = v;
    else if (!out.ignoreUnknown) throw new CniError(Code.InvalidEnv, `invalid CNI_ARGS: unknown key "${k}"`);
  }
  return out;
}
