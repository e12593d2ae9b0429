/**
 * Schema version 3: what ferryd learns from the node rather than from the shim. An attachment rebuilt
 * from its host veth's marker (adopted: its database had lost it) says when; `node_state` holds small
 * facts about the node and this database: the kernel's boot id at the last start, and the record of a
 * corrupt database that was moved aside.
 */
export const version = 3;
export const sql = `
ALTER TABLE attachments ADD COLUMN adopted_at_ms INTEGER;

CREATE TABLE node_state (
  key    TEXT PRIMARY KEY,
  value  TEXT NOT NULL
) WITHOUT ROWID;
`;
