/**
 * Schema version 5: a device is keyed by its identity (`id`), not its MAC. The identity of a device with a
 * PCI parent is its PCI address; of one without (a synthetic NIC, a veth) its MAC. A VF's MAC is often all
 * zeros, shared, or new each time its VFs are re-created, so the MAC becomes what the device was last seen
 * with (`mac`; none for a function with no netdev). SQLite cannot change a primary key in place: the table
 * is rebuilt with every row kept under `id` = its MAC. The PCI address of a MAC-keyed row is not known to
 * SQL: ferryd's scan re-keys the row the first time sysfs shows its MAC at a PCI address (at the first
 * start after this migration, for the devices on the node).
 */
export const version = 5;
export const sql = `
CREATE TABLE devices_v5 (
  id                    TEXT    PRIMARY KEY,
  mac                   TEXT,
  grp                   TEXT    NOT NULL,
  host_if_name          TEXT,
  present               INTEGER NOT NULL DEFAULT 0 CHECK (present IN (0, 1)),
  interface_id          INTEGER UNIQUE REFERENCES interfaces (id) ON DELETE SET NULL,
  reserved_namespace    TEXT,
  reserved_pod          TEXT,
  reserved_if_name      TEXT,
  reserved_json         TEXT,
  seen_at_ms            INTEGER,
  CHECK ((reserved_namespace IS NULL) = (reserved_pod IS NULL))
);
INSERT INTO devices_v5 (id, mac, grp, host_if_name, present, interface_id, reserved_namespace, reserved_pod,
    reserved_if_name, reserved_json, seen_at_ms)
  SELECT mac, mac, grp, host_if_name, present, interface_id, reserved_namespace, reserved_pod, reserved_if_name,
    reserved_json, seen_at_ms FROM devices;
DROP TABLE devices;
ALTER TABLE devices_v5 RENAME TO devices;
CREATE INDEX devices_reservation ON devices (reserved_namespace, reserved_pod);
CREATE INDEX devices_mac ON devices (mac);
`;
