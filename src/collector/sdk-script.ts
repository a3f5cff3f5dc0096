import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';
import { PACKAGE_ROOT } from '../package-root.js';

/**
 * Browsers keep the script an hour, then ask again with its ETag: a new SDK reaches every site
 * within the hour, and an unchanged one costs a 304.
 */
const CACHE_CONTROL = 'public, max-age=3600';

/** The SDK as the build left it. */
const BUILT_SCRIPT = join(PACKAGE_ROOT, 'dist', 'browser', 'cds.js');

interface Script {
  plain: Buffer;
  gzipped: Buffer;
  etag: string;
}

async function readScript(): Promise<Script> {
  let plain: Buffer;
  try {
    plain = await readFile(BUILT_SCRIPT);
  } catch {
    throw new AppError(
      503,
      'sdk_not_built',
      'the browser SDK is not built here: run npm run build',
    );
  }
  const etag = `"${createHash('sha256').update(plain).digest('base64url').slice(0, 27)}"`;
  return { plain, gzipped: gzipSync(plain, { level: 9 }), etag };
}

/** Whether `accept-encoding` takes gzip: named (or `*`) with no `q=0`. */
function acceptsGzip(header: string | undefined): boolean {
  return (header ?? '').split(',').some((entry) => {
    const [coding, ...parameters] = entry.split(';').map((part) => part.trim().toLowerCase());
    if (coding !== 'gzip' && coding !== '*') return false;
    const quality = parameters.find((parameter) => parameter.startsWith('q='));
    return quality === undefined || Number(quality.slice(2)) > 0;
  });
}

/** `GET /v1/cds.js`: the browser SDK (issue 19), read once, gzipped once, answered from memory. */
export function sdkScriptRoute(app: FastifyInstance): void {
  let script: Promise<Script> | null = null;
  app.get('/v1/cds.js', async (request, reply) => {
    script ??= readScript();
    const loaded = await script.catch((error: unknown) => {
      script = null;
      throw error;
    });
    reply
      .header('content-type', 'text/javascript; charset=utf-8')
      .header('cache-control', CACHE_CONTROL)
      .header('etag', loaded.etag)
      .header('vary', 'accept-encoding');
    const known = request.headers['if-none-match'];
    if (known?.split(',').some((tag) => tag.trim().replace(/^W\//, '') === loaded.etag)) {
      return reply.code(304).send();
    }
    if (acceptsGzip(request.headers['accept-encoding'])) {
      return reply.header('content-encoding', 'gzip').send(loaded.gzipped);
    }
    return reply.send(loaded.plain);
  });
}
