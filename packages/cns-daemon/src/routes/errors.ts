import { CniErrorSchema } from '@ferry/shared-types/api/error';

/** Every route answers errors in the CNI shape. */
export const errors = { '4xx': CniErrorSchema, '5xx': CniErrorSchema };
