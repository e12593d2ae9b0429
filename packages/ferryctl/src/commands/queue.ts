import { type QueueStatus, QueueStatusSchema } from '@ferry/shared-types/api/queue';
import type { Context } from '../context';
import { shortId, table } from '../format';

/** `queue` (pending and set-aside delete-queue entries), `queue retry FILE` (put a set-aside one back). */
export async function cmdQueue(ctx: Context): Promise<number> {
  const [sub, file] = ctx.positionals;
  let status: QueueStatus;
  if (sub === 'retry') {
    if (!file) return ctx.usage('queue retry needs the file name shown under FAILED');
    status = await ctx.client.call(
      'POST',
      `/v1/operator/queue/failed/${encodeURIComponent(file)}/retry`,
      QueueStatusSchema,
    );
  } else if (sub === undefined || sub === 'list') {
    status = await ctx.client.call('GET', '/v1/operator/queue', QueueStatusSchema);
  } else {
    return ctx.usage(`unknown queue subcommand "${sub}"`);
  }
  if (ctx.json) return ctx.print(JSON.stringify(status, null, 2));
  ctx.print(
    `queue ${status.dir}: ${status.pending.length} pending (oldest ${Math.round(status.oldestAgeSec)} s), ${status.failed.length} set aside`,
  );
  if (status.pending.length > 0) {
    ctx.print(
      `\n${table(
        ['PENDING', 'CONTAINER', 'IFNAME', 'QUEUED-AT', 'ATTEMPTS', 'LAST-ERROR'],
        status.pending.map((p) => [
          p.file,
          p.containerId ? shortId(p.containerId) : '-',
          p.ifName ?? '-',
          p.queuedAt ?? '-',
          String(p.attempts),
          p.lastError ?? '-',
        ]),
      )}`,
    );
  }
  if (status.failed.length > 0) {
    ctx.print(
      `\n${table(
        ['FAILED', 'ORIGINAL-NAME', 'MOVED-AT', 'REASON'],
        status.failed.map((f) => [f.file, JSON.stringify(f.originalName), f.movedAt, f.reason]),
      )}`,
    );
  }
  return 0;
}
