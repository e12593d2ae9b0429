/**
 * The schemas that get a generated check, by module. A check is generated where parsing with zod would
 * cost a hot path measurable time: every shim exec (the network config, a prevResult, ferryd's answers,
 * `ip -j` lists), every ferryd request of an ADD or DEL, every row ferryd reads.
 */
export interface Target {
  /** The generated module, relative to the repository root, without its extension (`.js` and `.d.ts`). */
  out: string;
  /** Schema modules, relative to the generated module's folder and without extension → their schemas. */
  schemas: Record<string, readonly string[]>;
}

export const TARGETS: readonly Target[] = [
  {
    out: 'packages/shared-types/src/checks',
    schemas: {
      './cni/config': ['NetConfSchema'],
      './cni/any-result': ['AnyResultSchema'],
      './api/allocations': ['AllocationSchema'],
      './api/endpoints': ['EndpointSchema', 'ReleaseResultSchema'],
    },
  },
  {
    // ferryd's side of the same API, apart: every shim exec loads the module above.
    out: 'packages/cns-daemon/src/request-checks',
    schemas: {
      '../../shared-types/src/api/allocations': ['AllocateRequestSchema'],
      '../../shared-types/src/api/common': ['ContainerIdParamsSchema'],
      '../../shared-types/src/api/endpoints': ['CommitRequestSchema', 'ReleaseQuerySchema'],
    },
  },
  {
    out: 'packages/net/src/checks',
    schemas: { './schemas': ['IpLinkListSchema', 'IpAddrListSchema', 'IpRouteListSchema'] },
  },
  {
    out: 'packages/cns-daemon/src/store/row-checks',
    schemas: {
      './rows': [
        'AttachmentRowSchema',
        'InterfaceRowSchema',
        'AddressRowSchema',
        'FamilyAddressRowSchema',
        'AddressListRowSchema',
        'DeviceRowSchema',
        'AssignmentRowSchema',
        'PoolRowSchema',
        'CountSchema',
        'CursorSchema',
        'StateCountSchema',
        'InterfaceCountSchema',
      ],
    },
  },
];
