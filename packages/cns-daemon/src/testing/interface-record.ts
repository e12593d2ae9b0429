/** An interface record as ferryd's operator view gives it (a committed InfraNIC of pod a/web-1), for unit tests. */
import type { InterfaceRecord } from '@ferry/shared-types/api/endpoints';

export function interfaceRecord(
  over: Partial<InterfaceRecord> & Pick<InterfaceRecord, 'containerId' | 'ifName'>,
): InterfaceRecord {
  return {
    endpointId: over.containerId,
    nicType: 'InfraNIC',
    network: 'ferry',
    attachmentIfName: 'eth0',
    netns: '/var/run/netns/x',
    pod: { namespace: 'a', name: 'web-1', uid: 'u1' },
    state: 'committed',
    generation: 1,
    addresses: [
      { family: 4, address: '10.244.1.5/32', gateway: '169.254.1.1' },
      { family: 6, address: 'fd00:10:244:1::5/128' },
    ],
    routes: [],
    mac: '02:00:00:00:00:05',
    createdAt: '2026-11-30T12:00:00.000Z',
    updatedAt: '2026-11-30T12:00:00.000Z',
    ...over,
  };
}
