/** Doctor's cluster checks: every peer's entries present, no stale Ferry entry, syncs succeeding. */
import type { Violation } from '@ferry/shared-types/api/operator';
import type { ClusterController } from './controller';
import { nodesReport } from './report';

export async function clusterViolations(c: ClusterController): Promise<Violation[]> {
  const report = await nodesReport(c);
  const out: Violation[] = [];
  if (report.sync.lastError) {
    out.push({ kind: 'cluster-sync-failing', subject: report.nodeName ?? '(node)', msg: report.sync.lastError });
  }
  for (const peer of report.peers) {
    for (const e of peer.entries) {
      if (e.state === 'present') continue;
      const what = `${e.kind} ${e.key}${e.value ? ` → ${e.value}` : ''}`;
      out.push(
        e.state === 'unroutable'
          ? { kind: 'peer-unroutable', subject: peer.name, msg: `${e.key}: ${e.reason ?? 'unroutable'}` }
          : {
              kind: 'peer-entry-missing',
              subject: peer.name,
              msg: `${what} is ${e.state}${e.reason ? `: ${e.reason}` : ''}`,
            },
      );
    }
  }
  for (const e of report.stale) {
    out.push({
      kind: 'cluster-entry-stale',
      subject: e.key,
      msg: `${e.kind} ${e.key} → ${e.value ?? ''} belongs to no peer`,
    });
  }
  return out;
}
