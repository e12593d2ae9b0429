/** Store rows → API records (one mapper per table pair, so SQL shapes never leak into routes). */
import type { AssignedAddress, PodRoute } from '@ferry/shared-types/api/common';
import { AssignedAddressSchema, PodRouteSchema } from '@ferry/shared-types/api/common';
import type { InterfaceRecord } from '@ferry/shared-types/api/endpoints';
import * as z from 'zod/mini';
import type { Ipam } from '../ipam/ipam';
import { type AttachmentRow, type InterfaceRow, parseRow } from '../store/rows';

const RoutesSchema = z.array(PodRouteSchema);
const AddressesSchema = z.array(AssignedAddressSchema);

export function routesOf(row: InterfaceRow): PodRoute[] {
  return parseRow(RoutesSchema, JSON.parse(row.routes_json), `interfaces.routes_json`);
}

/** Pool addresses, then the static ones an operator's reservation gave a delegated NIC. */
export function addressesOf(network: string, row: InterfaceRow, ipam: Ipam): AssignedAddress[] {
  const pooled = ipam.addressesOf(network, row.id);
  if (!row.static_addresses_json) return pooled;
  const statics = parseRow(AddressesSchema, JSON.parse(row.static_addresses_json), `interfaces.static_addresses_json`);
  return [...pooled, ...statics];
}

export function toRecord(a: AttachmentRow, i: InterfaceRow, ipam: Ipam): InterfaceRecord {
  return {
    containerId: i.container_id,
    ifName: i.if_name,
    endpointId: i.endpoint_id,
    nicType: i.nic_type,
    network: a.network,
    attachmentIfName: a.if_name,
    netns: a.netns,
    pod: {
      ...(a.pod_namespace !== null ? { namespace: a.pod_namespace } : {}),
      ...(a.pod_name !== null ? { name: a.pod_name } : {}),
      ...(a.pod_uid !== null ? { uid: a.pod_uid } : {}),
      ...(a.pod_infra_container_id !== null ? { infraContainerId: a.pod_infra_container_id } : {}),
    },
    state: a.state,
    generation: a.id,
    addresses: addressesOf(a.network, i, ipam),
    routes: routesOf(i),
    ...(i.mac !== null ? { mac: i.mac } : {}),
    ...(i.container_if_index !== null ? { containerIfIndex: i.container_if_index } : {}),
    ...(i.host_veth_name !== null ? { hostVethName: i.host_veth_name } : {}),
    ...(i.host_if_name !== null ? { hostIfName: i.host_if_name } : {}),
    ...(i.device_mac !== null ? { deviceMac: i.device_mac } : {}),
    createdAt: new Date(a.created_at_ms).toISOString(),
    updatedAt: new Date(a.updated_at_ms).toISOString(),
  };
}
