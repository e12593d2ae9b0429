/** The CNI names as zod schemas, for configs and API bodies, made of the rules in validate.ts. */
import * as z from 'zod/mini';
import { CONTAINER_ID_RULE, IFNAME_RULE, type NameRule, NETWORK_NAME_RULE } from './validate';

/** The checks in nameProblem's order, so the first issue is the problem it names. */
function nameSchema(rule: NameRule) {
  return z
    .string()
    .check(
      z.minLength(1, 'is empty'),
      z.maxLength(rule.maxLength, rule.tooLong),
      ...rule.patterns.map(({ pattern, problem }) => z.regex(pattern, problem)),
    );
}

/** A CNI container ID. */
export const ContainerIdSchema = nameSchema(CONTAINER_ID_RULE);
/** A Linux interface name. */
export const IfNameSchema = nameSchema(IFNAME_RULE);
/** A CNI network name. */
export const NetworkNameSchema = nameSchema(NETWORK_NAME_RULE);

/** A file system path that does not depend on the working directory. */
export const absolutePath = () => z.string().check(z.regex(/^\//, { message: 'must be an absolute path' }));
