/** prom-client's per-metric modules (lib/metrics/*.js, CommonJS), which its typings do not describe. */
declare module 'prom-client/lib/metrics/*' {
  import type { Registry } from 'prom-client';

  const registerMetric: (registry: Registry, config: { prefix?: string }) => void;
  export default registerMetric;
}
