import * as fs from 'node:fs';
import type { SyncFs } from './sync-fs';

/** SyncFs as Node's own node:fs (every runtime but the Bun binary: fs.ts). */
export default fs satisfies SyncFs;
