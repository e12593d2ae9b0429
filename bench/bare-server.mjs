// The baseline for ferryd.bench.ts: fastify with one JSON route on a unix socket, nothing else.
// Plain JavaScript so Node runs it as is.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.post('/echo', async (req) => ({ ok: true, got: req.body }));
await app.listen({ path: process.argv[2] });
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
