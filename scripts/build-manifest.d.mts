export const MANIFEST: string;
export const OUTPUTS: Record<'ferryd' | 'ferryctl' | 'ferry-cni', string[]>;
export function sourcesFingerprint(root: string): string;
export function recordBuild(root: string, target: keyof typeof OUTPUTS, fingerprint: string): void;
export function buildProblems(root: string): string[];
