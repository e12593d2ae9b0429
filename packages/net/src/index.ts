export * from './batch';
export * from './ip';
export * from './netns';
export * from './run';
export * from './schemas';
export * from './sysctl';
