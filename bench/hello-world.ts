import Fastify from 'fastify';

// The baseline: what a bare Fastify does on this machine, no plugins, no logging.
const port = Number(process.argv[2] ?? process.env.PORT ?? 3000);
const host = process.env.HOST ?? '127.0.0.1';

const app = Fastify({ logger: false });
app.get('/', async (_req, reply) => reply.type('text/plain').send('hello world'));

await app.listen({ port, host });

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    void app.close().then(() => process.exit(0));
  });
}
