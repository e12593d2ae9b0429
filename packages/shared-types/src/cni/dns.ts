/**
 * The `dns` object (SPEC.md §1 in configs, §5 in results): a module of its own, so a schema that carries
 * DNS (ferryd's allocation answer, its config) does not build every result schema with it.
 */
import * as z from 'zod/mini';

const shape = {
  nameservers: z.optional(z.array(z.string())),
  domain: z.optional(z.string()),
  search: z.optional(z.array(z.string())),
  options: z.optional(z.array(z.string())),
};

/** In a result, and in ferryd's answers: exactly these keys. */
export const DnsSchema = z.strictObject(shape);

/** In a network config: unknown keys are kept and ignored, as the spec asks of plugins. */
export const ConfDnsSchema = z.looseObject(shape);
