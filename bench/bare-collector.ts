import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { encodeLines } from '../src/collector/landing-writer.js';
import { landingWriter } from '../src/collector/runtime.js';
import { loadConfig } from '../src/config.js';

/**
 * The baseline for the single-event collector figure: a bare Fastify route that does the same
 * durable append (group commit, fdatasync) with no validation, registry, auth or rate limit.
 */
const landing = mkdtempSync(join(tmpdir(), 'cds-bare-'));
const writer = landingWriter(landing, loadConfig({}, {}));
writer.start();
const app = Fastify({ bodyLimit: 1024 * 1024 });
app.post('/v1/events', async (request, reply) => {
  const receivedAt = new Date().toISOString();
  const text = `{"received_at":"${receivedAt}","source":"browser","collector_id":"${writer.collectorId}","event":${JSON.stringify(request.body)}}\n`;
  await writer.append(
    encodeLines([{ tenantId: 'bench', workspaceId: 'store-a', receivedAt, text }]),
  );
  return reply.code(202).send({ accepted: 1 });
});
const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`bare listening on ${address}\n`);
process.once('SIGTERM', async () => {
  await app.close();
  await writer.close();
  rmSync(landing, { recursive: true, force: true });
  process.exit(0);
});
