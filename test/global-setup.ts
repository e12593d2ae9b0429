/**
 * Before the e2e suite: the build must be this checkout's, whole and current (the suite runs dist/,
 * never sources: scripts/build-manifest.mjs says what that means), and whatever a
 * killed earlier run left behind is removed: its ferry-t-* namespaces, the processes it started
 * (ended by the PIDs it recorded), what its containerd left (shims, mounts, cgroups), the tmpfs mounts in
 * its temp dirs, its temp dirs. After the suite: the same sweep for this run.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { buildProblems } from '../scripts/build-manifest.mjs';
import { sweepContainerdLeftovers } from './fixtures/containerd-leftovers';
import { PID_DIR, PREFIX, ROOT } from './fixtures/paths';

async function sweep(): Promise<void> {
  if (existsSync(PID_DIR)) {
    for (const pid of readdirSync(PID_DIR)) {
      let cmdline = '';
      try {
        cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        // Gone already.
      }
      // Only a process still running one of our binaries: a recycled PID belongs to someone else.
      if (cmdline.includes('ferry')) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // Exited meanwhile.
        }
      }
      rmSync(join(PID_DIR, pid), { force: true });
    }
  }
  // containerd's shims and pause processes, mounts and cgroups outlive it: before its dir goes.
  await sweepContainerdLeftovers('/tmp', PREFIX);
  const list = await execa('ip', ['-j', 'netns', 'list'], { reject: false });
  const names: { name: string }[] = list.stdout.trim() ? JSON.parse(list.stdout) : [];
  for (const { name } of names) {
    if (name.startsWith(PREFIX)) await execa('ip', ['netns', 'del', name], { reject: false });
  }
  // A killed run may have left a tmpfs mounted in its temp dir (fixtures/tmpfs.ts): unmount only those.
  for (const line of readFileSync('/proc/self/mounts', 'utf8').split('\n')) {
    const mountPoint = line.split(' ')[1];
    if (mountPoint?.startsWith(`/tmp/${PREFIX}`)) await execa('umount', ['--lazy', mountPoint], { reject: false });
  }
  for (const entry of readdirSync('/tmp')) {
    if (entry.startsWith(PREFIX) && entry !== `${PREFIX}pids`)
      rmSync(join('/tmp', entry), { recursive: true, force: true });
  }
}

export async function setup(): Promise<() => Promise<void>> {
  const problems = buildProblems(ROOT);
  if (problems.length > 0) {
    throw new Error(`dist/ is not a build of this checkout; run \`pnpm build\`:\n  ${problems.join('\n  ')}`);
  }
  if (process.getuid?.() !== 0) throw new Error('the e2e suite needs root (network namespaces)');
  await sweep();
  return async () => {
    if (process.env.FERRY_KEEP_NETNS !== '1') await sweep();
  };
}
