/**
 * Schema version 1. Available addresses are not stored: a row exists only for an address that is
 * Assigned or cooling down (PendingRelease), so an IPv6 /64 costs nothing. Offsets are fixed-width hex
 * text so their order is the numeric order whatever the family.
 */
export const version = 1;
export const sql = `
CREATE TABLE pools (
  id           INTEGER PRIMARY KEY,
  network      TEXT    NOT NULL,
  family       INTEGER NOT NULL CHECK (family IN (4, 6)),
  subnet       TEXT    NOT NULL,
  -- offset (hex) of the address handed out last: allocation goes round-robin from here,
  -- so a just-freed address is the last to be reused (host-local's last_reserved_ip).
  cursor_hex   TEXT,
  UNIQUE (network, family)
);

CREATE TABLE attachments (
  -- Each allocation of (container_id, if_name) is a new generation; AUTOINCREMENT never reuses one, so a
  -- request naming an earlier generation can never act on a later attachment.
  generation               INTEGER PRIMARY KEY AUTOINCREMENT,
  network                  TEXT    NOT NULL,
  container_id             TEXT    NOT NULL,
  if_name                  TEXT    NOT NULL,
  netns                    TEXT    NOT NULL,
  pod_namespace            TEXT,
  pod_name                 TEXT,
  pod_uid                  TEXT,
  pod_infra_container_id   TEXT,
  state                    TEXT    NOT NULL CHECK (state IN ('allocated', 'committed')),
  created_at_ms            INTEGER NOT NULL,
  updated_at_ms            INTEGER NOT NULL,
  UNIQUE (container_id, if_name)
);
CREATE INDEX attachments_network ON attachments (network);

CREATE TABLE interfaces (
  id                  INTEGER PRIMARY KEY,
  attachment_id       INTEGER NOT NULL REFERENCES attachments (generation) ON DELETE CASCADE,
  position            INTEGER NOT NULL,
  container_id        TEXT    NOT NULL,
  if_name             TEXT    NOT NULL,
  endpoint_id         TEXT    NOT NULL,
  nic_type            TEXT    NOT NULL CHECK (nic_type IN ('InfraNIC', 'DelegatedNIC')),
  routes_json         TEXT    NOT NULL DEFAULT '[]',
  mac                 TEXT,
  container_if_index  INTEGER,
  host_veth_name      TEXT,
  host_if_name        TEXT,
  device_mac          TEXT,
  UNIQUE (container_id, if_name)
);
CREATE INDEX interfaces_attachment ON interfaces (attachment_id);

CREATE TABLE addresses (
  pool_id          INTEGER NOT NULL REFERENCES pools (id),
  offset_hex       TEXT    NOT NULL,
  address          TEXT    NOT NULL,
  state            TEXT    NOT NULL CHECK (state IN ('Assigned', 'PendingRelease')),
  interface_id     INTEGER REFERENCES interfaces (id),
  since_ms         INTEGER NOT NULL,
  available_at_ms  INTEGER,
  PRIMARY KEY (pool_id, offset_hex),
  -- The invariant doctor checks, enforced where it can be: owned exactly when Assigned.
  CHECK ((state = 'Assigned') = (interface_id IS NOT NULL)),
  CHECK ((state = 'PendingRelease') = (available_at_ms IS NOT NULL))
) WITHOUT ROWID;
CREATE INDEX addresses_interface ON addresses (interface_id);
-- The cooldown sweep (and allocation's per-pool sweep) reads only the rows whose cooldown has ended.
CREATE INDEX addresses_cooling ON addresses (pool_id, available_at_ms) WHERE state = 'PendingRelease';
`;
