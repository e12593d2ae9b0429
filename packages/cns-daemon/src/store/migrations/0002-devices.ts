/**
 * Schema version 2: the inventory of delegatable host devices, keyed by MAC (a device's name changes
 * as it moves between namespaces; its MAC does not), and static addresses for interfaces whose
 * addresses come from an operator's reservation rather than a pool.
 */
export const version = 2;
export const sql = `
CREATE TABLE devices (
  mac                   TEXT    PRIMARY KEY,
  grp                   TEXT    NOT NULL,
  -- The name the device has, and gets back, on the node.
  host_if_name          TEXT,
  present               INTEGER NOT NULL DEFAULT 0 CHECK (present IN (0, 1)),
  -- Assigned to this interface; released with it (a device can never serve two pods).
  interface_id          INTEGER UNIQUE REFERENCES interfaces (id) ON DELETE SET NULL,
  -- An operator's pre-assignment to a pod, by namespace and name.
  reserved_namespace    TEXT,
  reserved_pod          TEXT,
  reserved_if_name      TEXT,
  reserved_json         TEXT,
  seen_at_ms            INTEGER,
  CHECK ((reserved_namespace IS NULL) = (reserved_pod IS NULL))
);
CREATE INDEX devices_reservation ON devices (reserved_namespace, reserved_pod);

ALTER TABLE interfaces ADD COLUMN static_addresses_json TEXT;
`;
