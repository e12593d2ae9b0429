import * as m0001 from './0001-init';

/** Every migration, in order. A database whose user_version is above the last one is refused. */
export const MIGRATIONS: readonly { version: number; sql: string }[] = [m0001];
export const SCHEMA_VERSION = MIGRATIONS.at(-1)?.version ?? 0;
