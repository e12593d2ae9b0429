// The baselines for ferryd.bench.ts: fastify with one JSON route on a unix socket.
//   node bare-server.mjs <socket>             nothing else: the route echoes the body
//   node bare-server.mjs <socket> <database>  and each request first commits one row to SQLite, set up
//                                            the way ferryd sets its database up (WAL, synchronous=NORMAL,
//                                            1 KiB pages, exclusive locking): the floor for any server
//                                            that stores each request durably before it answers.
// Plain JavaScript so Node runs it as is.
import Database from 'better-sqlite3';
import Fastify from 'fastify';

const [socket, database] = process.argv.slice(2);
const app = Fastify({ logger: false });
if (database) {
  const db = new Database(database);
  db.pragma('page_size = 1024');
  db.pragma('locking_mode = EXCLUSIVE');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('wal_autocheckpoint = 10000');
  db.exec('CREATE TABLE IF NOT EXISTS requests (id INTEGER PRIMARY KEY, key TEXT UNIQUE, body TEXT)');
  const insert = db.prepare('INSERT INTO requests (key, body) VALUES (?, ?)');
  // Rows are dropped as they are added, so the table stays small (as ferryd's does under churn).
  const drop = db.prepare('DELETE FROM requests WHERE id = ?');
  let n = 0;
  const store = db.transaction((body) => {
    const id = Number(insert.run(`r${n++}`, JSON.stringify(body)).lastInsertRowid);
    if (id > 100) drop.run(id - 100);
    return id;
  });
  app.post('/echo', async (req) => ({ ok: true, id: store(req.body), got: req.body }));
} else {
  app.post('/echo', async (req) => ({ ok: true, got: req.body }));
}
await app.listen({ path: socket });
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
