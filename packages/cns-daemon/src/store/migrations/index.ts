import * as m0001 from './0001-init';
import * as m0002 from './0002-devices';
import * as m0003 from './0003-node-state';
import * as m0004 from './0004-blocks';
import * as m0005 from './0005-device-identity';

/** Every migration, in order. A database whose user_version is above the last one is refused. */
export const MIGRATIONS: readonly { version: number; sql: string }[] = [m0001, m0002, m0003, m0004, m0005];
export const SCHEMA_VERSION = MIGRATIONS.at(-1)?.version ?? 0;
