/**
 * Small predicates for checking decoded JSON by hand where building a zod schema would cost the shim
 * more than the check (answers.ts, result.ts). Each mirrors the zod rule of the same name.
 */
export type Check = (v: unknown) => boolean;

export const isString: Check = (v) => typeof v === 'string';
export const isNumber: Check = (v) => typeof v === 'number' && Number.isFinite(v);
export const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
export const isPositiveInt: Check = (v) => isInt(v) && v > 0;
export const maxLength =
  (n: number): Check =>
  (v) =>
    typeof v === 'string' && v.length <= n;
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
  return (v) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
    const o = v as Record<string, unknown>;
    for (const [key, check] of Object.entries(required)) if (!(key in o) || !check(o[key])) return false;
    for (const [key, check] of Object.entries(optional)) if (key in o && !check(o[key])) return false;
    return true;
  };
}

/** A strict object: as a loose one, and no other key. */
export function strictObject(required: Record<string, Check>, optional: Record<string, Check> = {}): Check {
  const loose = looseObject(required, optional);
  return (v) => loose(v) && Object.keys(v as object).every((key) => key in required || key in optional);
}
