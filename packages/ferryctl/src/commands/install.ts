/**
 * `ferryctl install`: what the DaemonSet's init container runs on every node.
 * 1. ferry-cni into the CNI bin dir, atomically (the runtime may exec the old one at any moment);
 * 2. the conflist into the CNI conf dir, atomically, after checking it is a Ferry conflist;
 * 3. optionally ferryd's config, rendered from a template with this node's pod CIDRs
 *    ({{POD_CIDR_V4}}, {{POD_CIDR_V6}}) and validated against ferryd's own schema.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { writeFileAtomically } from '@ferry/files';
import { NetConfSchema } from '@ferry/shared-types/cni/config';
import { FerrydConfigSchema } from '@ferry/shared-types/config/ferryd';
import { CniError, Code } from '@ferry/shared-types/errors';
import { parseAs } from '@ferry/shared-types/parse';
import { parse as parseYaml } from 'yaml';
import * as z from 'zod/mini';
import type { Context } from '../context';
import { inClusterAccess, podCidrsOf } from '../install/pod-cidrs';
import { parseJson } from '../json';

const ConflistSchema = z.looseObject({
  cniVersion: z.string(),
  name: z.string(),
  plugins: z.array(z.looseObject({ type: z.string() })).check(z.minLength(1)),
});

export async function cmdInstall(ctx: Context): Promise<number> {
  const f = ctx.flags;
  const str = (k: string) => (typeof f[k] === 'string' ? (f[k] as string) : undefined);
  const shim = str('shim');
  const binDir = str('cni-bin-dir');
  const conflistPath = str('conflist');
  const confDir = str('cni-conf-dir');
  if (!shim || !binDir || !conflistPath || !confDir) {
    return ctx.usage('install needs --shim, --cni-bin-dir, --conflist and --cni-conf-dir');
  }

  // Everything is read and checked first, so a bad input leaves the node as it was.
  const conflistText = readFileSync(conflistPath, 'utf8');
  const conflist = parseAs(
    ConflistSchema,
    parseJson(conflistText, conflistPath),
    Code.InvalidConfig,
    `conflist ${conflistPath}`,
  );
  const ferry = conflist.plugins.find((p) => p.type === 'ferry-cni');
  if (!ferry) throw new CniError(Code.InvalidConfig, `conflist ${conflistPath}: no plugin of type ferry-cni`);
  parseAs(
    NetConfSchema,
    { ...ferry, cniVersion: conflist.cniVersion, name: conflist.name },
    Code.InvalidConfig,
    `conflist ${conflistPath}: ferry-cni`,
  );
  const shimBytes = readFileSync(shim);
  const template = str('ferryd-config-template');
  const out = str('ferryd-config-out');
  let rendered: string | undefined;
  if (template && out) {
    rendered = readFileSync(template, 'utf8');
    if (/\{\{POD_CIDR_V[46]\}\}/.test(rendered)) {
      const node = str('node');
      if (!node) return ctx.usage('the ferryd config template names {{POD_CIDR_V4/6}}: --node is needed');
      const api = inClusterAccess(process.env, {
        ...(str('api-server') ? { server: str('api-server') } : {}),
        ...(str('api-token-file') ? { tokenFile: str('api-token-file') } : {}),
        ...(str('api-ca-file') ? { caFile: str('api-ca-file') } : {}),
      });
      const cidrs = await podCidrsOf(node, api);
      for (const [placeholder, value, family] of [
        ['{{POD_CIDR_V4}}', cidrs.v4, 'IPv4'],
        ['{{POD_CIDR_V6}}', cidrs.v6, 'IPv6'],
      ] as const) {
        if (!rendered.includes(placeholder)) continue;
        if (!value) {
          throw new CniError(
            Code.InvalidConfig,
            `install: node ${node} has no ${family} pod CIDR (the template names ${placeholder})`,
          );
        }
        rendered = rendered.replaceAll(placeholder, value);
      }
    }
    parseAs(FerrydConfigSchema, parseYaml(rendered), Code.InvalidConfig, `rendered ferryd config ${out}`);
  }

  mkdirSync(binDir, { recursive: true });
  writeFileAtomically(binDir, 'ferry-cni', shimBytes, { mode: 0o755 });
  ctx.print(`installed ${binDir}/ferry-cni`);
  mkdirSync(confDir, { recursive: true });
  writeFileAtomically(confDir, basename(conflistPath), conflistText, { mode: 0o644 });
  ctx.print(`installed ${confDir}/${basename(conflistPath)}`);
  if (rendered !== undefined && out) {
    mkdirSync(dirname(out), { recursive: true });
    writeFileAtomically(dirname(out), basename(out), rendered, { mode: 0o600 });
    ctx.print(`rendered ${out}`);
  }
  return 0;
}
