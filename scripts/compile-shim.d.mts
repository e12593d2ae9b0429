export function compileShim(entry: string, to: string): void;
