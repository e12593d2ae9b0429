/**
 * The DaemonSet's image, built here by scripts/build-image.mjs (no image registry), run under podman the
 * way the kubelet runs deploy/daemonset.yaml's pod (fixtures/kubelet.ts: command, env, mounts,
 * hostNetwork, privileges and probes all read from the manifests): the init containers render and check
 * ferryd's config from the ConfigMap and the node's pod CIDR (a TLS stand-in for the API server, reached
 * with the service account's token and CA, as in a cluster) and install ferry-cni and the conflist into
 * host directories; ferryd serves in the node's namespace (a test namespace) and programs its routes and
 * masquerade with the image's ip and nft; a pod goes through ADD, CHECK and DEL with the installed binary
 * and conflist; Prometheus scrapes the metrics port from another host; SIGTERM leaves the CNI files.
 *
 * FERRY_IMAGE_ARCHIVE=<archive of build-image.mjs> skips the build (only for reruns by hand: the archive
 * must hold this checkout's dist/, which the test checks).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import type { IDaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { afterAll, expect, test } from 'vitest';
import { parseAllDocuments, parse as parseYaml, stringify } from 'yaml';
import { newContainerId } from '../fixtures/conf';
import { type Conflist, conflistAdd, conflistCheck, conflistDel } from '../fixtures/conflist';
import { useContainerd } from '../fixtures/containerd';
import { link, linkNames, ping, routes } from '../fixtures/kernel';
import { nodeObject, podObject, useKubeApi } from '../fixtures/kube-api';
import { runPod } from '../fixtures/kubelet';
import { inNetns, inNetnsTry, useNetns, useVeth } from '../fixtures/netns';
import { fetchIn } from '../fixtures/netns-fetch';
import { NODE_IPV4, useNodeNetns } from '../fixtures/node';
import { DIST_BIN, PREFIX, ROOT } from '../fixtures/paths';
import { usePodmanStore } from '../fixtures/podman';
import { useRegistry } from '../fixtures/registry';
import { writeSelfSignedCert } from '../fixtures/tls';
import { useTmpDir } from '../fixtures/tmp';
import { waitFor } from '../fixtures/wait';

const NODE = { name: 'node-img', ip: '198.51.100.11', podCIDR: '10.244.7.0/24' };
const PEER = { name: 'node-b', ip: '198.51.100.12', podCIDR: '10.244.8.0/24' };
const POD = { namespace: 'default', name: 'app-5d8f7c9b4-x2x7q' };

function manifests(): { kind?: string }[] {
  return readdirSync(join(ROOT, 'deploy'))
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .flatMap((f) => parseAllDocuments(readFileSync(join(ROOT, 'deploy', f), 'utf8')).map((d) => d.toJSON()));
}

/**
 * The image archive, built once for every test of this file (its summary printed), or the one
 * FERRY_IMAGE_ARCHIVE names. It lives under the run's prefix until the file's tests are done (global-setup
 * removes it after a killed run).
 */
let built: Promise<string> | undefined;
const buildDir = mkdtempSync(join(tmpdir(), `${PREFIX}image-build-`));
afterAll(() => rmSync(buildDir, { recursive: true, force: true }));
function imageArchive(): Promise<string> {
  const given = process.env.FERRY_IMAGE_ARCHIVE;
  if (given) return Promise.resolve(given);
  built ??= (async () => {
    const out = join(buildDir, 'ferry.tar');
    const build = await execa(process.execPath, [join(ROOT, 'scripts', 'build-image.mjs'), '--out', out], {
      reject: false,
      all: true,
      timeout: 900_000,
    });
    if (build.exitCode !== 0) throw new Error(`build-image.mjs exited ${build.exitCode}:\n${build.all}`);
    console.log(`image: ${build.stdout}`);
    return out;
  })();
  return built;
}

test('the DaemonSet of deploy/ from the image build-image.mjs makes: install, serve, ADD/CHECK/DEL, probes, scrape, SIGTERM', {
  timeout: 1_200_000,
}, async (t) => {
  const objects = manifests();
  const ds = objects.find((o) => o.kind === 'DaemonSet') as IDaemonSet;
  const cm = objects.find((o) => o.kind === 'ConfigMap') as {
    metadata: { name: string };
    data: Record<string, string>;
  };
  const spec = ds.spec?.template.spec;
  if (!spec) throw new Error('the DaemonSet has no pod spec');
  const image = spec.containers[0]?.image ?? '';
  const dir = useTmpDir(t, 'image');
  const archive = await imageArchive();

  // The node: its own namespace with an address on a link to the rest of the network (the underlay,
  // where the peer node would be and whence Prometheus scrapes), and the API server on its loopback.
  const node = await useNodeNetns(t);
  const underlay = await useNetns(t, 'ul');
  await useVeth(node, 'eth0', underlay, 'ul0');
  await inNetns(node, 'ip', 'addr', 'add', `${NODE.ip}/24`, 'dev', 'eth0');
  await inNetns(underlay, 'ip', 'addr', 'add', '198.51.100.1/24', 'dev', 'ul0');
  const tls = await writeSelfSignedCert(dir, ['127.0.0.1']);
  const api = await useKubeApi(t, { netns: node, tls });
  await api.put(nodeObject(NODE.name, [NODE.ip], [NODE.podCIDR]));
  await api.put(nodeObject(PEER.name, [PEER.ip], [PEER.podCIDR]));
  await api.putPod(podObject(POD.namespace, POD.name, NODE.name));

  const podman = await usePodmanStore(t, node);
  const loaded = await podman.run('load', '--input', archive);
  expect(loaded.exitCode, loaded.stderr).toBe(0);
  // What the image holds: the Node it says, which loads the SQLite addon of this checkout's build, and
  // the tools ferryd runs.
  const inImage = await podman.run(
    'run',
    '--rm',
    ...podman.runFlags,
    '--network=none',
    '--entrypoint=["/bin/sh", "-ec"]',
    image,
    'node -p process.version; node -e "require(\'/opt/ferry/lib/better_sqlite3.node\')"; ip -V; nft --version; iptables --version; flock --version; nsenter --version; cat /opt/ferry/image.json /opt/ferry/build-manifest.json',
  );
  expect(inImage.exitCode, inImage.stderr).toBe(0);
  const [nodeVersion, ...tools] = inImage.stdout.split('\n');
  expect(nodeVersion).toMatch(/^v20\./);
  expect(tools.slice(0, 5).join('\n')).toMatch(
    /^ip utility.*\nnftables v.*\niptables v.*\nflock from util-linux.*\nnsenter from/,
  );
  const labels = JSON.parse((await podman.run('image', 'inspect', '--format', '{{json .Labels}}', image)).stdout);
  expect(labels['dev.ferry.image.node']).toMatch(new RegExp(`^${nodeVersion?.replaceAll('.', '\\.')} \\(nodejs `));
  expect(inImage.stdout).toContain(readFileSync(join(ROOT, 'dist', 'build-manifest.json'), 'utf8').trim());

  const pod = runPod(t, {
    podman,
    name: 'ferryd-img',
    namespace: ds.metadata?.namespace ?? '',
    spec,
    node: { name: NODE.name, netns: node, ip: NODE.ip },
    configMaps: { [cm.metadata.name]: cm.data },
    // Pod namespaces are made by the runtime under the host's /var/run/netns; ferryd reads them there.
    hostPaths: { '/var/run/netns': '/var/run/netns' },
    apiServer: { host: api.host, port: api.port, caFile: tls.cert, token: 'ferryd-service-account-token' },
  });

  // The init containers: config rendered from the node's pod CIDR, then checked. No CNI file yet: the
  // node gets ferry-cni only from ferryd's postStart hook, once this pod's ferryd serves.
  const init = await pod.runInitContainers();
  expect(init.map((c) => c.name)).toEqual(['render-config', 'check-config']);
  expect(init[1]?.output).toMatch(
    /config \/run\/ferry-config\/ferryd\.yaml is valid \(networks: ferry; cluster: node node-img, routing vxlan, peers from Kubernetes; metrics on 0\.0\.0\.0:9479\)/,
  );
  expect((await api.stats()).requests).toContainEqual({ verb: 'get', resource: 'nodes' });
  const cniBin = pod.onHost('/opt/cni/bin');
  const cniConf = pod.onHost('/etc/cni/net.d');
  expect(readdirSync(cniConf)).toEqual([]);

  // ferryd, then its postStart hook (ferryctl install, waiting for this ferryd to serve): the CNI files.
  await pod.startContainers();
  expect(pod.postStartOutput('ferryd')).toMatch(/installed \/host\/etc\/cni\/net\.d\/10-ferry\.conflist/);
  // The stand-in node has no CNI plugins: the image's portmap (the conflist chains it) and loopback went in.
  expect(readdirSync(cniBin).sort()).toEqual(['ferry-cni', 'loopback', 'portmap']);
  expect(pod.postStartOutput('ferryd')).toMatch(/installed \/host\/opt\/cni\/bin\/portmap \(the node had none\)/);
  expect(readFileSync(join(cniBin, 'ferry-cni')).equals(readFileSync(join(DIST_BIN, 'ferry-cni')))).toBe(true);
  expect(readdirSync(cniConf)).toEqual(['10-ferry.conflist']);
  const installed = readFileSync(join(cniConf, '10-ferry.conflist'), 'utf8');
  expect(installed).toBe(cm.data['10-ferry.conflist']);
  // Ready once its readiness probe passes; both probes' commands, inside the image.
  await pod.waitReady('ferryd');
  // Both probes, as the kubelet sends them: HTTP from the node to the pod's (the node's) address.
  expect(await pod.probe('ferryd', 'livenessProbe')).toMatchObject({ exitCode: 0 });
  expect(JSON.parse((await pod.probe('ferryd', 'readinessProbe')).output)).toMatchObject({ ready: true });
  // From inside the image, ferryd routed the peer's pod CIDR over its VXLAN device (ip) and put in its
  // egress masquerade table (nft), in the node's namespace and nowhere else.
  await waitFor(
    'the route to the peer',
    async () => (await routes(node, 4)).some((r) => r.dst === PEER.podCIDR),
    30_000,
  );
  expect((await link(node, 'ferry.1'))?.linkinfo?.info_kind).toBe('vxlan');
  expect(await inNetns(node, 'nft', 'list', 'tables')).toContain('table inet ferry');

  // A pod, as the runtime would run the installed conflist: ferry-cni from the node's CNI bin dir
  // (portmap from the image, put there by the install step), the pod's name in CNI_ARGS. Paths on the node's host paths are
  // where the stand-in keeps them.
  const conflist = JSON.parse(installed) as Conflist;
  const onNode = (v: unknown) => (typeof v === 'string' && v.startsWith('/') ? pod.onHost(v) : v);
  conflist.plugins = conflist.plugins.map((p) =>
    p.type === 'ferry-cni'
      ? Object.fromEntries(Object.entries(p).map(([k, v]) => [k, k === 'type' ? v : onNode(v)]))
      : p,
  );
  const containerId = newContainerId();
  const call = {
    containerId,
    ifName: 'eth0',
    netns: await useNetns(t, 'pod'),
    cniPath: [cniBin],
    cniArgs: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${POD.namespace};K8S_POD_NAME=${POD.name};K8S_POD_INFRA_CONTAINER_ID=${containerId}`,
  };
  const add = await conflistAdd(node, conflist, call);
  expect(add.exitCode, `${add.failed}: ${JSON.stringify(add.json)}`).toBe(0);
  const ips = (add.json as { ips: { address: string }[] }).ips.map((i) => i.address);
  expect(ips).toEqual(['10.244.7.1/32']);
  expect(await ping(call.netns, NODE_IPV4)).toBe(true);
  await waitFor(
    "the pod's network-status annotation",
    async () =>
      (await api.getPod(POD.namespace, POD.name))?.metadata.annotations?.['k8s.v1.cni.cncf.io/network-status'] !==
      undefined,
    15_000,
  );
  // The README's look at a node (kubectl exec ds/ferryd -- ferryctl endpoints): the image's ferryctl on
  // the pod's socket.
  const listed = await pod.exec('ferryd', '/opt/ferry/bin/ferryctl', '--json', 'endpoints');
  expect(listed.exitCode, listed.output).toBe(0);
  const eps = JSON.parse(listed.output) as { endpoints: { containerId: string; interfaces: { pod: object }[] }[] };
  expect(eps.endpoints.map((e) => [e.containerId, e.interfaces.map((i) => i.pod)])).toEqual([
    [containerId, [{ namespace: POD.namespace, name: POD.name, infraContainerId: containerId }]],
  ]);
  // Debian's portmap cannot pass CHECK (chained.test.ts says why); ferry-cni's CHECK runs.
  const check = await conflistCheck(node, conflist, call, add.json, { skip: ['portmap'] });
  expect(check.exitCode, `${check.failed}: ${JSON.stringify(check.json)}`).toBe(0);

  // Prometheus, from another host: the scrape port, with the ADD counted; nothing else there.
  const port = ds.spec?.template.metadata?.annotations?.['prometheus.io/port'];
  const scrape = await fetchIn(underlay, 'GET', `http://${NODE.ip}:${port}/metrics`);
  expect(scrape.status).toBe(200);
  expect(scrape.body).toContain('ferry_allocations_total{network="ferry"} 1');
  expect(scrape.body).toContain('ferry_ready 1');
  expect((await fetchIn(underlay, 'GET', `http://${NODE.ip}:${port}/v1/operator/endpoints`)).status).toBe(404);

  for (const n of [1, 2]) {
    const del = await conflistDel(node, conflist, call, add.json);
    expect(del.exitCode, `DEL #${n} ${del.failed}: ${JSON.stringify(del.json)}`).toBe(0);
  }
  expect(await linkNames(call.netns)).toEqual(['lo']);

  // SIGTERM, as the kubelet stops the pod: ferryd exits cleanly and the CNI files stay for the next one.
  expect(await pod.stop('ferryd')).toBe(0);
  expect(await pod.logs('ferryd')).toContain('"msg":"ferryd stopped"');
  expect(readdirSync(cniConf)).toEqual(['10-ferry.conflist']);
  expect(readFileSync(join(cniConf, '10-ferry.conflist'), 'utf8')).toBe(installed);
  expect(readdirSync(cniBin).sort()).toEqual(['ferry-cni', 'loopback', 'portmap']);
});

/** A conflist the hostNetwork sandbox below never runs (the CRI plugin wants one to start). */
const LOOPBACK_ONLY: Conflist = { cniVersion: '1.0.0', name: 'lo', plugins: [{ type: 'loopback' }] };

test("pushed by build-image.mjs --push, pulled by containerd's CRI as the kubelet pulls the DaemonSet's image (a mirror for its registry), its containers run from it over the CRI", {
  timeout: 1_200_000,
}, async (t) => {
  const objects = manifests();
  const ds = objects.find((o) => o.kind === 'DaemonSet') as IDaemonSet;
  const cm = objects.find((o) => o.kind === 'ConfigMap') as { data: Record<string, string> };
  const spec = ds.spec?.template.spec;
  if (!spec) throw new Error('the DaemonSet has no pod spec');
  const image = spec.containers[0]?.image ?? '';
  const registryHost = image.slice(0, image.indexOf('/'));
  const repository = image.slice(image.indexOf('/') + 1, image.lastIndexOf(':'));
  const tag = image.slice(image.lastIndexOf(':') + 1);
  const archive = await imageArchive();

  // The registry on the node's loopback; the image pushed there under the DaemonSet's repository and tag.
  const node = await useNodeNetns(t);
  const registry = await useRegistry(t, node);
  const pushed = await inNetnsTry(
    node,
    process.execPath,
    join(ROOT, 'scripts', 'build-image.mjs'),
    '--archive',
    archive,
    '--push',
    `${registry.address}/${repository}:${tag}`,
    '--push-insecure',
  );
  expect(pushed.exitCode, pushed.stderr).toBe(0);
  const digest = new RegExp(`^pushed ${registry.address}/${repository}:${tag}@(sha256:[0-9a-f]{64})$`, 'm').exec(
    pushed.stdout,
  )?.[1];
  expect(digest, pushed.stdout).toBeDefined();
  const archived = JSON.parse((await execa('tar', ['-xOf', archive, 'manifest.json'])).stdout) as { Config: string }[];
  const imageId = `sha256:${archived[0]?.Config.replace(/\.json$/, '')}`;

  // containerd as a node runs it, its registry config naming the mirror for the DaemonSet's registry
  // (which is unreachable from here: only the mirror can answer). PullImage is the kubelet's call.
  const containerd = await useContainerd(t, {
    node,
    conflist: LOOPBACK_ONLY,
    mirrors: { [registryHost]: `http://${registry.address}` },
  });
  const base = containerd.podConfig('ferryd-cri');
  const sandboxConfig = {
    ...base,
    hostname: '',
    linux: {
      ...base.linux,
      securityContext: { namespaceOptions: { network: 'NODE', pid: 'NODE' } as const, privileged: true },
    },
  };
  const ref = await containerd.cri.pullImage(image, sandboxConfig);
  expect(ref).toBe(imageId);
  expect(registry.log()).toContain(`/v2/${repository}/manifests/${tag}`);
  mkdirSync(sandboxConfig.logDirectory, { recursive: true });
  const sandbox = await containerd.cri.runPodSandbox(sandboxConfig);

  // The containers as the kubelet makes them of the pod spec: command, env (the downward API's node name,
  // the API server's Service), a directory per volume mount, privileged, the host's network and PIDs.
  const host = useTmpDir(t, 'cri-volumes');
  const rendered = (cm.data['ferryd.yaml.tmpl'] ?? '').replaceAll('{{POD_CIDR_V4}}', '10.244.9.0/24');
  const run = async (name: string, files: Record<string, string> = {}) => {
    const c = [...(spec.initContainers ?? []), ...spec.containers].find((x) => x.name === name);
    if (!c) throw new Error(`no container ${name}`);
    const mounts = (c.volumeMounts ?? []).map((m) => {
      const dir = join(host, name, m.name);
      mkdirSync(dir, { recursive: true });
      return { containerPath: m.mountPath, hostPath: dir, readonly: m.readOnly ?? false };
    });
    for (const [path, text] of Object.entries(files)) {
      const mount = mounts.find((m) => path.startsWith(`${m.containerPath}/`));
      if (!mount) throw new Error(`${path} is on no mount of ${name}`);
      writeFileSync(join(mount.hostPath, path.slice(mount.containerPath.length)), text);
    }
    const env = (c.env ?? []).map((e) => ({
      key: e.name,
      value: e.valueFrom?.fieldRef?.fieldPath === 'spec.nodeName' ? 'node-cri' : (e.value ?? ''),
    }));
    const id = await containerd.cri.createContainer(
      sandbox,
      {
        metadata: { name, attempt: 0 },
        image: { image },
        command: c.command ?? [],
        args: c.args ?? [],
        envs: [
          ...env,
          { key: 'KUBERNETES_SERVICE_HOST', value: '10.96.0.1' },
          { key: 'KUBERNETES_SERVICE_PORT', value: '443' },
        ],
        mounts,
        logPath: `${name}.log`,
        linux: {
          securityContext: {
            privileged: c.securityContext?.privileged ?? false,
            namespaceOptions: { network: 'NODE', pid: 'NODE' },
          },
        },
      },
      sandboxConfig,
    );
    await containerd.cri.startContainer(id);
    const output = () =>
      readFileSync(join(sandboxConfig.logDirectory, `${name}.log`), 'utf8')
        .split('\n')
        .map((l) => l.replace(/^\S+ (stdout|stderr) [FP] /, ''))
        .join('\n');
    return { id, mounts, output };
  };

  // The check-config init container: ferryd --check from the pulled image, on the ConfigMap's template.
  const check = await run('check-config', { '/run/ferry-config/ferryd.yaml': rendered });
  await waitFor(
    'check-config to exit',
    async () => (await containerd.cri.containerStatus(check.id)).state === 'CONTAINER_EXITED',
    60_000,
  );
  const status = await containerd.cri.containerStatus(check.id);
  // The container runs the pushed manifest, by the DaemonSet's name.
  expect([status.exitCode, status.imageRef], check.output()).toEqual([0, `${registryHost}/${repository}@${digest}`]);
  expect(check.output()).toContain('config /run/ferry-config/ferryd.yaml is valid');

  // ferryd itself, on the node's network, with the template less its cluster section (no API server
  // here): it serves, writes this pod's ready file, and the readiness probe passes as the kubelet sends it.
  const { cluster: _, ...local } = parseYaml(rendered) as Record<string, unknown>;
  const ferryd = await run('ferryd', { '/run/ferry-config/ferryd.yaml': stringify(local) });
  const probe = spec.containers.find((c) => c.name === 'ferryd')?.readinessProbe?.httpGet;
  await waitFor(
    'ferryd ready, as its readiness probe sees it',
    async () =>
      (await fetchIn(node, 'GET', `http://${NODE_IPV4}:${probe?.port}${probe?.path}`).catch(() => ({ status: 0 })))
        .status === 200,
    60_000,
  ).catch((err) => {
    throw new Error(`${err}\n${ferryd.output()}`);
  });
  const podState = ferryd.mounts.find((m) => m.containerPath === '/run/ferry-pod')?.hostPath ?? '';
  expect(readdirSync(podState)).toEqual(['ready']);
  expect((await containerd.cri.containerStatus(ferryd.id)).state).toBe('CONTAINER_RUNNING');
});
