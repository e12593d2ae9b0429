// Nothing: compiled as ferry-cni is (scripts/compile-shim.mjs), it measures what the Bun runtime alone
// costs an exec (bench/exec-floor.bench.ts).
export {};
