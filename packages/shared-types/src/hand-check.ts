/**
 * Small predicates for checking decoded JSON by hand where a zod schema would cost more than the check:
 * the shim's start-up (answers.ts, result.ts), ferryd's hot requests and rows. Each mirrors the zod rule of
 * the same name; every use is held to its schema by testing/oracle.ts.
 */
import { containerIdProblem, ifNameProblem, networkNameProblem } from './cni/validate';

export type Check = (v: unknown) => boolean;

export const isString: Check = (v) => typeof v === 'string';
export const isNumber: Check = (v) => typeof v === 'number' && Number.isFinite(v);
export const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
export const isPositiveInt: Check = (v) => isInt(v) && v > 0;
export const maxLength =
  (n: number): Check =>
  (v) =>
    typeof v === 'string' && v.length <= n;
export const nullable =
  (check: Check): Check =>
  (v) =>
    v === null || check(v);
/** The CNI names (cni/names.ts's schemas). */
export const isIfName: Check = (v) => typeof v === 'string' && ifNameProblem(v) === undefined;
export const isNetworkName: Check = (v) => typeof v === 'string' && networkNameProblem(v) === undefined;
export const isContainerId: Check = (v) => typeof v === 'string' && containerIdProblem(v) === undefined;
/** zod's mac(), lower case only (zod also takes all upper case). */
export const isMac: Check = (v) => typeof v === 'string' && /^(?:[0-9a-f]{2}:){5}[0-9a-f]{2}$/.test(v);
export const oneOf =
  (...values: unknown[]): Check =>
  (v) =>
    values.includes(v);
export const arrayOf =
  (item: Check): Check =>
  (v) =>
    Array.isArray(v) && v.every(item);
/** A loose object: every required key valid, optional keys valid when present, other keys kept. */
export function looseObject(required: Record<string, Check>, optional: Record<string, Check> = {}): Check {
  const requiredChecks = Object.entries(required);
  const optionalChecks = Object.entries(optional);
  return (v) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
    const o = v as Record<string, unknown>;
    for (const [key, check] of requiredChecks) if (!(key in o) || !check(o[key])) return false;
    for (const [key, check] of optionalChecks) if (key in o && !check(o[key])) return false;
    return true;
  };
}

/** A strict object: as a loose one, and no other key. */
export function strictObject(required: Record<string, Check>, optional: Record<string, Check> = {}): Check {
  const loose = looseObject(required, optional);
  return (v) => loose(v) && Object.keys(v as object).every((key) => key in required || key in optional);
}
