export * from './batch';
export * from './ip';
export * from './iproute2';
export * from './link-monitor';
export * from './net-error';
export * from './netns';
export * from './run';
// Types only: the schemas themselves are '@ferry/net/schemas', loaded when something parses with them.
export type { IpAddrLink, IpLink, IpRoute } from './schemas';
export * from './sysctl';
