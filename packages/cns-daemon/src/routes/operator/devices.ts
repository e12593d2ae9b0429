import {
  DeviceListSchema,
  DeviceParamsSchema,
  DeviceSchema,
  ReservationRequestSchema,
} from '@ferry/shared-types/api/devices';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Operator } from '../../operator';
import { errors } from '../errors';

/** The delegated-NIC inventory, and reservations of devices for pods. */
export const operatorDeviceRoutes: FastifyPluginAsyncZod<{ operator: Operator }> = async (app, { operator }) => {
  app.get(
    '/v1/operator/devices',
    {
      schema: {
        summary: 'Delegatable devices: state, holder, reservation',
        response: { 200: DeviceListSchema, ...errors },
      },
    },
    async () => ({ devices: operator.devices() }),
  );

  app.put(
    '/v1/operator/devices/:device/reservation',
    {
      schema: {
        summary: 'Pre-assign a device to a pod (by namespace and name) before the pod starts',
        params: DeviceParamsSchema,
        body: ReservationRequestSchema,
        response: { 200: DeviceSchema, ...errors },
      },
    },
    async (req) => {
      const d = operator.reserveDevice(req.params.device, req.body);
      req.log.info({ device: d.id, namespace: req.body.namespace, pod: req.body.pod }, 'device reserved');
      return d;
    },
  );

  app.delete(
    '/v1/operator/devices/:device/reservation',
    {
      schema: {
        summary: "Drop a device's reservation",
        params: DeviceParamsSchema,
        response: { 200: DeviceSchema, ...errors },
      },
    },
    async (req) => {
      const d = operator.unreserveDevice(req.params.device);
      req.log.info({ device: d.id }, 'device reservation dropped');
      return d;
    },
  );
};
