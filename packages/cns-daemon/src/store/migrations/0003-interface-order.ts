/**
 * Schema version 3: an attachment's interfaces are read in position order on every ADD, CHECK and DEL;
 * with position in the index SQLite reads them in order instead of sorting them each time.
 */
export const version = 3;
export const sql = `
DROP INDEX interfaces_attachment;
CREATE INDEX interfaces_attachment ON interfaces (attachment_id, position);
`;
