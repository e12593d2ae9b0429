/** Store rows → API records (one mapper per table pair, so SQL shapes never leak into routes). */
import type { AssignedAddress, PodRoute } from '@ferry/shared-types/api/common';
import { AssignedAddressSchema, PodRouteSchema } from '@ferry/shared-types/api/common';
import type { InterfaceRecord } from '@ferry/shared-types/api/endpoints';
import * as z from 'zod/mini';
import type { Ipam } from '../ipam/ipam';
import { type AttachmentRow, type InterfaceRow, parseRow } from '../store/rows';

const RoutesSchema = z.array(PodRouteSchema);
const AddressesSchema = z.array(AssignedAddressSchema);

/**
 * Checked route lists by their stored text. Every InfraNIC of a network stores the same text, so each
 * text is parsed and checked once rather than on every ADD and DEL (checking a CIDR is not cheap). The
 * lists are frozen because they are shared; the map is emptied when reservations' own routes fill it.
 */
const checkedRoutes = new Map<string, readonly PodRoute[]>();
const CHECKED_ROUTES_MAX = 256;

export function routesOf(row: InterfaceRow): PodRoute[] {
  let routes = checkedRoutes.get(row.routes_json);
  if (!routes) {
    const parsed = parseRow(RoutesSchema, JSON.parse(row.routes_json), `interfaces.routes_json`);
    routes = Object.freeze(parsed.map((r) => Object.freeze(r)));
    if (checkedRoutes.size >= CHECKED_ROUTES_MAX) checkedRoutes.clear();
    checkedRoutes.set(row.routes_json, routes);
  }
  return routes as PodRoute[];
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
    generation: a.generation,
    addresses: addressesOf(a.network, i, ipam),
    routes: routesOf(i),
    ...(i.mac !== null ? { mac: i.mac } : {}),
    ...(i.container_if_index !== null ? { containerIfIndex: i.container_if_index } : {}),
    ...(i.host_veth_name !== null ? { hostVethName: i.host_veth_name } : {}),
    ...(i.host_if_name !== null ? { hostIfName: i.host_if_name } : {}),
    ...(i.device_mac !== null ? { deviceMac: i.device_mac } : {}),
    ...(i.userspace_pci_address !== null ? { userspace: true, pciAddress: i.userspace_pci_address } : {}),
    createdAt: new Date(a.created_at_ms).toISOString(),
    updatedAt: new Date(a.updated_at_ms).toISOString(),
    ...(a.adopted_at_ms !== null ? { adoptedAt: new Date(a.adopted_at_ms).toISOString() } : {}),
  };
}
