import type { InterfaceRecord } from '../api/endpoints';

/**
 * An interface record as ferryd answers it, for tests that stand in for ferryd: the InfraNIC `eth0` of
 * container c1 on network ferry, committed, unless `fields` say otherwise.
 */
export function interfaceRecordOf(fields: Partial<InterfaceRecord> = {}): InterfaceRecord {
  return {
    containerId: 'c1',
    ifName: 'eth0',
    endpointId: 'c1',
    nicType: 'InfraNIC',
    network: 'ferry',
    attachmentIfName: 'eth0',
    netns: '',
    pod: {},
    state: 'committed',
    generation: 1,
    addresses: [],
    routes: [],
    createdAt: '2026-11-30T23:00:00.000Z',
    updatedAt: '2026-11-30T23:00:00.000Z',
    ...fields,
  };
}
