/**
 * `ferryctl install`: what the DaemonSet runs on every node (its render-config init container, and its
 * ferryd container's postStart hook), in two steps that may also run together:
 * - ferryd's config (--ferryd-config-template, --ferryd-config-out), rendered from a template with this
 *   node's pod CIDRs ({{POD_CIDR_V4}}, {{POD_CIDR_V6}}) and validated against ferryd's schema;
 * - the CNI files (--shim, --cni-bin-dir, --conflist, --cni-conf-dir): ferry-cni into the CNI bin dir and
 *   the conflist into the CNI conf dir, atomically (the runtime may exec the old one at any moment), after
 *   checking it is a Ferry conflist. With --plugins-dir (the image's /usr/lib/cni: Debian's portmap and
 *   loopback), every other plugin the conflist chains, and loopback (which the runtime runs in every pod),
 *   must be in the CNI bin dir already (the node's own is left as it is) or in the plugins dir (then it is
 *   put in place); a plugin on neither side is refused before anything is written, since every ADD on the
 *   node would fail. The conflist goes in last, once everything it names is there.
 * The DaemonSet renders the config first and runs `ferryd --check` on it before the CNI files go in, so a
 * ConfigMap ferryd would refuse never leaves a node with a conflist and no ferryd.
 * With --ready-file (the DaemonSet's postStart hook), the CNI files go in only once the ferryd writing that
 * file serves the socket (--wait-sec, 120 by default): during a surge the old ferryd serves until the new
 * one has taken over, and a new ferry-cni must never meet the old ferryd (the version-skew rule allows a
 * ferryd one API version newer than ferry-cni, never older: docs/architecture.md, "Version skew").
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { EXECUTABLE_WRITE_BYTES, writeFileAtomically } from '@ferry/files';
import { NetConfSchema } from '@ferry/shared-types/cni/config';
import { FerrydConfigSchema } from '@ferry/shared-types/config/ferryd';
import { CniError, Code, onFile } from '@ferry/shared-types/errors';
import { parseAs } from '@ferry/shared-types/parse';
import { parse as parseYaml } from 'yaml';
import * as z from 'zod/mini';
import type { Context } from '../context';
import { type ApiAccess, inClusterAccess, podCidrsOf } from '../install/pod-cidrs';
import { parseJson } from '../json';

import { untilServedBy } from '../ready-file';

const ConflistSchema = z.looseObject({
  cniVersion: z.string(),
  name: z.string(),
  plugins: z.array(z.looseObject({ type: z.string() })).check(z.minLength(1)),
});

export async function cmdInstall(ctx: Context): Promise<number> {
  const f = ctx.flags;
  const str = (k: string) => (typeof f[k] === 'string' ? (f[k] as string) : undefined);
  const cniFlags = ['shim', 'cni-bin-dir', 'conflist', 'cni-conf-dir'] as const;
  const [shim, binDir, conflistPath, confDir] = cniFlags.map(str);
  const template = str('ferryd-config-template');
  const out = str('ferryd-config-out');
  const wantsCni = cniFlags.some((k) => str(k) !== undefined);
  const wantsConfig = template !== undefined || out !== undefined;
  if (!wantsCni && !wantsConfig) {
    return ctx.usage(
      "install needs the CNI files (--shim, --cni-bin-dir, --conflist, --cni-conf-dir), ferryd's config (--ferryd-config-template, --ferryd-config-out), or both",
    );
  }
  if (wantsCni && !(shim && binDir && conflistPath && confDir)) {
    return ctx.usage('install needs --shim, --cni-bin-dir, --conflist and --cni-conf-dir together');
  }
  if (wantsConfig && !(template && out)) {
    return ctx.usage('install needs --ferryd-config-template and --ferryd-config-out together');
  }

  const waitSec = Number(str('wait-sec') ?? 120);
  if (!Number.isSafeInteger(waitSec) || waitSec < 0) return ctx.usage('install: --wait-sec takes whole seconds');

  // Everything is read and checked first, so a bad input leaves the node as it was.
  const cni = shim && binDir && conflistPath && confDir ? readCniFiles(shim, conflistPath) : undefined;
  const pluginsDir = str('plugins-dir');
  const plugins =
    cni && binDir && conflistPath && pluginsDir
      ? missingPlugins(cni.pluginTypes, binDir, pluginsDir, conflistPath)
      : [];
  let rendered: string | undefined;
  if (template && out) {
    const text = onFile(`read the ferryd config template ${template}`, () => readFileSync(template, 'utf8'));
    const node = str('node');
    if (!node && PLACEHOLDER.test(text)) {
      return ctx.usage('the ferryd config template names {{POD_CIDR_V4/6}}: --node is needed');
    }
    rendered = await renderFerrydConfig(text, out, node, {
      ...(str('api-server') ? { server: str('api-server') } : {}),
      ...(str('api-token-file') ? { tokenFile: str('api-token-file') } : {}),
      ...(str('api-ca-file') ? { caFile: str('api-ca-file') } : {}),
    });
  }

  const readyFile = str('ready-file');
  if (cni && readyFile) {
    const why = await untilServedBy(readyFile, ctx.socket, waitSec * 1000);
    if (why) throw new CniError(Code.TryAgainLater, `install: ferry-cni left as it is: ${why}`);
  }
  if (cni && binDir && conflistPath && confDir) {
    for (const p of plugins) {
      const bytes = onFile(`read the plugin ${p.from}`, () => readFileSync(p.from));
      installFile(binDir, p.type, bytes, 0o755, EXECUTABLE_WRITE_BYTES);
      ctx.print(`installed ${binDir}/${p.type} (the node had none)`);
    }
    installFile(binDir, 'ferry-cni', cni.shimBytes, 0o755, EXECUTABLE_WRITE_BYTES);
    ctx.print(`installed ${binDir}/ferry-cni`);
    installFile(confDir, basename(conflistPath), cni.conflistText, 0o644);
    ctx.print(`installed ${confDir}/${basename(conflistPath)}`);
  }
  if (rendered !== undefined && out) {
    installFile(dirname(out), basename(out), rendered, 0o600);
    ctx.print(`rendered ${out}`);
  }
  return 0;
}

/** The plugins the runtime needs beside ferry-cni: loopback (every pod's lo), and what the conflist chains. */
const ALWAYS_NEEDED = ['loopback'];
const PLUGIN_TYPE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** The plugins to copy from `pluginsDir` (the node lacks them); a CniError for one neither side has. */
function missingPlugins(
  types: readonly string[],
  binDir: string,
  pluginsDir: string,
  conflistPath: string,
): { type: string; from: string }[] {
  const out: { type: string; from: string }[] = [];
  for (const type of new Set([...ALWAYS_NEEDED, ...types])) {
    if (type === 'ferry-cni') continue;
    // A type is a file name in the bin dir (libcni looks it up there): no path in it.
    if (!PLUGIN_TYPE.test(type)) {
      throw new CniError(Code.InvalidConfig, `conflist ${conflistPath}: plugin type "${type}" is not a file name`);
    }
    if (existsSync(join(binDir, type))) continue;
    if (!existsSync(join(pluginsDir, type))) {
      throw new CniError(
        Code.InvalidConfig,
        `conflist ${conflistPath}: plugin ${type} is neither on the node (${binDir}) nor in the image (${pluginsDir}); every ADD would fail`,
      );
    }
    out.push({ type, from: join(pluginsDir, type) });
  }
  return out;
}

/** The shim's bytes and the conflist's text, once the conflist is known to be a Ferry one. */
function readCniFiles(
  shim: string,
  conflistPath: string,
): { shimBytes: Buffer; conflistText: string; pluginTypes: string[] } {
  const conflistText = onFile(`read the conflist ${conflistPath}`, () => readFileSync(conflistPath, 'utf8'));
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
  return {
    shimBytes: onFile(`read the shim ${shim}`, () => readFileSync(shim)),
    conflistText,
    pluginTypes: conflist.plugins.map((p) => p.type),
  };
}

function installFile(dir: string, name: string, content: string | Buffer, mode: number, maxWriteBytes?: number): void {
  onFile(`write ${dir}/${name}`, () => {
    mkdirSync(dir, { recursive: true });
    writeFileAtomically(dir, name, content, { mode, ...(maxWriteBytes ? { maxWriteBytes } : {}) });
  });
}

const PLACEHOLDER = /\{\{POD_CIDR_V[46]\}\}/;

/** ferryd's config from its template's text, with this node's pod CIDRs in place of the placeholders. */
async function renderFerrydConfig(
  template: string,
  out: string,
  node: string | undefined,
  access: Partial<ApiAccess>,
): Promise<string> {
  let rendered = template;
  if (node && PLACEHOLDER.test(rendered)) {
    const cidrs = await podCidrsOf(node, inClusterAccess(process.env, access));
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
  return rendered;
}
