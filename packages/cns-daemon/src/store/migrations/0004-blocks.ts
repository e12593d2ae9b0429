/**
 * Schema version 4: cluster IPAM (docs/architecture.md "Cluster IPAM"). `blocks`: the blocks of a range
 * this node holds through IPBlock objects, and those it is giving back (`releasing`: no address is handed
 * out of one, and the release is retried until the API server has answered, across restarts).
 * `static_claims`: the IPClaim objects this node made for static addresses, likewise kept until their
 * deletion has been answered. The API server is the record of who holds what; these rows are what ferryd
 * may act on while it is away.
 */
export const version = 4;
export const sql = `
CREATE TABLE blocks (
  pool_id         INTEGER NOT NULL REFERENCES pools (id),
  cidr            TEXT    NOT NULL,
  name            TEXT    NOT NULL,
  uid             TEXT    NOT NULL,
  state           TEXT    NOT NULL CHECK (state IN ('held', 'releasing')),
  claimed_at_ms   INTEGER NOT NULL,
  -- Since when no address of the block is assigned or cooling (null: some is): it goes back after releaseAfterSec.
  empty_since_ms  INTEGER,
  PRIMARY KEY (pool_id, cidr)
) WITHOUT ROWID;

CREATE TABLE static_claims (
  address         TEXT    PRIMARY KEY,
  name            TEXT    NOT NULL,
  uid             TEXT    NOT NULL,
  state           TEXT    NOT NULL CHECK (state IN ('held', 'releasing')),
  pod_namespace   TEXT    NOT NULL,
  pod_name        TEXT    NOT NULL,
  pod_uid         TEXT    NOT NULL,
  claimed_at_ms   INTEGER NOT NULL
) WITHOUT ROWID;
`;
