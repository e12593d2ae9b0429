import { CniError, Code } from '@ferry/shared-types/errors';
import { type BatchLine, type FdbBatch, type IpBatch, quoteBatchWord } from './batch';
import { type FailedLine, type IpBackend, parseJsonLines, type Show } from './ip';
import { kindOfStrerror, NetError, type NetErrorKind } from './net-error';
import { describeNetns, ipArgv, type Netns } from './netns';
import type { Runner, RunResult } from './run';

/** The argv after `ip -j -d` (or `bridge -j -d`) of each read. */
function showArgs(q: Show): { tool: 'ip' | 'bridge'; args: string[] } {
  switch (q.of) {
    case 'link':
      return { tool: 'ip', args: ['link', 'show', 'dev', q.dev] };
    case 'links':
      return { tool: 'ip', args: ['link', 'show'] };
    case 'addresses':
      return { tool: 'ip', args: ['addr', 'show', 'dev', q.dev] };
    case 'routes':
      // Batch lines and this read alike: `table all` shows both families; Ip keeps `dev`'s own.
      return { tool: 'ip', args: ['route', 'show', 'table', 'all'] };
    case 'routes-of':
      return { tool: 'ip', args: ['route', 'show', 'table', 'all', 'proto', String(q.proto)] };
    case 'neighbours':
      return { tool: 'ip', args: ['neigh', 'show', 'dev', q.dev] };
    case 'fdb':
      return { tool: 'bridge', args: ['fdb', 'show', 'dev', q.dev] };
  }
}

/**
 * The kind a failed run's error output says, read here and nowhere else. First the tools' own words for
 * a namespace they cannot enter (`ip -n NAME`, `nsenter --net=PATH`, a line's `netns PATH`) and a device
 * name they cannot resolve, and the extended acks the kernel sends instead of a strerror for a taken name
 * or address; then the kernel's errno as iproute2 prints it ("RTNETLINK answers: <strerror>") and nft
 * does ("Could not process rule: <strerror>").
 */
export function kindOfOutput(stderr: string): NetErrorKind {
  const words: readonly (readonly [RegExp, NetErrorKind])[] = [
    [/^Cannot open network namespace ".*": No such file or directory$/m, 'no-netns'],
    [/^setting the network namespace ".*" failed: Invalid argument$/m, 'no-netns'],
    [/^nsenter: cannot open .*: No such file or directory$/m, 'no-netns'],
    [/^nsenter: reassociate to namespace 'ns\/net' failed: Invalid argument$/m, 'no-netns'],
    // netns_get_fd could not open a line's `netns PATH` (and PATH is no pid either).
    [/Invalid "netns" value$/m, 'no-netns'],
    [/^Cannot find device ".*"$|^Device ".*" does not exist\.$/m, 'no-device'],
    [/^Error: .*(?:an interface with the same name exists|already assigned|already exists)/im, 'exists'],
  ];
  for (const [pattern, kind] of words) if (pattern.test(stderr)) return kind;
  const printed = /^(?:RTNETLINK answers|Error: Could not process rule): (.+)$/m.exec(stderr)?.[1];
  return kindOfStrerror(printed);
}

/**
 * The NetError of a failed run of iproute2, bridge or nft: its kind from its output, its reason the last
 * two lines the tool wrote (or the exit code).
 */
export function netErrorOfRun(
  action: string,
  result: RunResult,
  argv: readonly string[],
  failedLine?: number,
): NetError {
  const why = result.stderr.trim().split('\n').filter(Boolean).slice(-2).join('; ') || `exit code ${result.exitCode}`;
  return new NetError(kindOfOutput(result.stderr), action, why, { argv, failedLine });
}

/** Ip's backend through iproute2 processes: a batch is one `ip -batch -`, every other call one exec. */
export class Iproute2 implements IpBackend {
  readonly #run: Runner;

  constructor(run: Runner) {
    this.#run = run;
  }

  async apply(ns: Netns, batch: IpBatch, what: string): Promise<unknown[]> {
    const lines = batch.lines;
    const hasJson = lines.some((l) => l.json);
    const quoted = lines.map((l) => l.args.map(quoteBatchWord));
    if (quoted.some((words) => words.some((w) => w === undefined))) return this.#applyOneByOne(ns, lines, what);
    const global = hasJson ? ['-j', '-d'] : [];
    const argv = ipArgv(ns, [...global, '-batch', '-']);
    const input = `${quoted.map((words) => words.join(' ')).join('\n')}\n`;
    const r = await this.#run(argv, input);
    if (r.exitCode !== 0) {
      const failed = /Command failed -:(\d+)/.exec(r.stderr);
      const index = failed ? Number(failed[1]) - 1 : undefined;
      const line = index === undefined ? undefined : lines[index];
      const where = line ? ` (ip ${line.args.join(' ')})` : '';
      throw netErrorOfRun(`${what} in ${describeNetns(ns)}${where}`, r, argv, index);
    }
    return hasJson ? parseJsonLines(r.stdout) : [];
  }

  async applyEach(ns: Netns, batch: IpBatch | FdbBatch): Promise<FailedLine[]> {
    const quoted = batch.lines.map((l) => l.args.map(quoteBatchWord));
    const bad = quoted.findIndex((words) => words.some((w) => w === undefined));
    if (bad >= 0)
      throw new CniError(Code.Internal, `${batch.tool} -batch: line ${bad + 1} cannot be quoted for a batch`);
    const argv = ipArgv(ns, ['-force', '-batch', '-'], batch.tool);
    const r = await this.#run(argv, `${quoted.map((words) => words.join(' ')).join('\n')}\n`);
    if (r.exitCode === 0) return [];
    const failed: FailedLine[] = [];
    let reasons: string[] = [];
    for (const line of r.stderr.split('\n')) {
      const m = /^Command failed -:(\d+)/.exec(line);
      if (m) {
        const kind = kindOfOutput(reasons.join('\n'));
        failed.push({ index: Number(m[1]) - 1, kind, message: reasons.map(withoutPrefix).join('; ') || 'failed' });
        reasons = [];
      } else if (line.trim()) reasons.push(line.trim());
    }
    // Nothing attributable to a line: the process itself failed (no such netns, a parse error).
    if (failed.length === 0) throw netErrorOfRun(`${batch.tool} -batch in ${describeNetns(ns)}`, r, argv);
    return failed;
  }

  async show(ns: Netns, query: Show, what: string): Promise<unknown[]> {
    const { tool, args } = showArgs(query);
    const argv = ipArgv(ns, ['-j', '-d', ...args], tool);
    const r = await this.#run(argv);
    if (r.exitCode !== 0) throw netErrorOfRun(`${what} in ${describeNetns(ns)}`, r, argv);
    return parseJsonLines(r.stdout);
  }

  async routeTo(ns: Netns, dst: string): Promise<unknown[]> {
    const argv = ipArgv(ns, ['-j', 'route', 'get', dst]);
    const r = await this.#run(argv);
    if (r.exitCode !== 0) throw netErrorOfRun(`look up the route to ${dst} in ${describeNetns(ns)}`, r, argv);
    return parseJsonLines(r.stdout);
  }

  async deleteLink(ns: Netns, name: string): Promise<void> {
    const argv = ipArgv(ns, ['link', 'del', 'dev', name]);
    const r = await this.#run(argv);
    if (r.exitCode !== 0) throw netErrorOfRun(`delete link ${name} in ${describeNetns(ns)}`, r, argv);
  }

  /** A batch with a word `ip -batch` cannot carry: each line on its own command line. */
  async #applyOneByOne(ns: Netns, lines: readonly BatchLine[], what: string): Promise<unknown[]> {
    const out: unknown[] = [];
    for (const [index, line] of lines.entries()) {
      const argv = ipArgv(ns, line.json ? ['-j', '-d', ...line.args] : [...line.args]);
      const r = await this.#run(argv);
      if (r.exitCode !== 0) {
        throw netErrorOfRun(`${what} in ${describeNetns(ns)} (ip ${line.args.join(' ')})`, r, argv, index);
      }
      if (line.json) out.push(...parseJsonLines(r.stdout));
    }
    return out;
  }
}

const withoutPrefix = (reason: string) => reason.replace(/^Error: /, '');
