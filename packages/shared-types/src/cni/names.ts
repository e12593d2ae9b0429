/** The CNI names as zod schemas, for configs and API bodies (the checks live in validate.ts). */
import * as z from 'zod/mini';
import { containerIdProblem, ifNameProblem, networkNameProblem } from './validate';

function fromProblem(problem: (v: string) => string | undefined) {
  return z.string().check(
    z.superRefine((v, ctx) => {
      const p = problem(v);
      if (p) ctx.addIssue({ code: 'custom', message: p, input: v });
    }),
  );
}

/** A CNI container ID. */
export const ContainerIdSchema = fromProblem(containerIdProblem);
/** A Linux interface name. */
export const IfNameSchema = fromProblem(ifNameProblem);
/** A CNI network name. */
export const NetworkNameSchema = fromProblem(networkNameProblem);

/** A file system path that does not depend on the working directory. */
export const absolutePath = () => z.string().check(z.regex(/^\//, { message: 'must be an absolute path' }));
