import { InvariantReportSchema } from '@ferry/shared-types/api/operator';
import type { Context } from '../context';
import { table } from '../format';

/** `doctor`: ferryd's invariant check; exit 1 when anything is violated. */
export async function cmdDoctor(ctx: Context): Promise<number> {
  const report = await ctx.client.call('GET', '/v1/operator/invariants', InvariantReportSchema);
  if (ctx.json) {
    ctx.print(JSON.stringify(report, null, 2));
    return report.ok ? 0 : 1;
  }
  if (report.ok) {
    ctx.print('ok: every invariant holds');
    return 0;
  }
  ctx.print(
    table(
      ['VIOLATION', 'SUBJECT', 'DETAIL'],
      report.violations.map((v) => [v.kind, v.subject, v.msg]),
    ),
  );
  ctx.print(`\n${report.violations.length} violations`);
  return 1;
}
