/** How a lock is taken: shared (many holders) or exclusive (one). Its own module: lock.ts and both of its implementations need it. */
export type LockMode = 'shared' | 'exclusive';
