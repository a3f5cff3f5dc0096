import { basename, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { PACKAGE_ROOT } from '../package-root.js';
import { requirePackage } from '../require-package.js';

/** Where `npm run build` puts the console (scripts/build-console.mjs). */
const CONSOLE_DIR = join(PACKAGE_ROOT, 'dist', 'console');

/**
 * Scripts and styles only from this origin, no inline script or style attribute, no framing, no
 * plug-ins: a string from the data that slipped into markup could run nothing (docs/console.md).
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Hashed names change with their content: a browser may keep them for a year. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** The icon keeps its name across versions: kept a day. */
const ICON_CACHE = 'public, max-age=86400';

/** What a browser may keep of a console file: index.html names the current assets. */
function cacheControlOf(path: string): string {
  const name = basename(path);
  if (name.startsWith('index.html')) return 'no-cache';
  if (name.startsWith('favicon.svg')) return ICON_CACHE;
  return IMMUTABLE;
}

/**
 * `GET /console/` and its assets (issue 31), precompressed, from the same origin as the `/v1` API
 * the console calls with the token it is given. No route here reads a token: the files are the
 * same for everybody, and what a token may see is the API's to decide.
 */
export function consoleRoutes(app: FastifyInstance): void {
  const fastifyStatic = requirePackage<typeof import('@fastify/static')>('@fastify/static');
  app.register(fastifyStatic.default, {
    root: CONSOLE_DIR,
    prefix: '/console/',
    preCompressed: true,
    index: ['index.html'],
    // The console's own files only; a path outside them is the 404 of every unknown route.
    wildcard: false,
    cacheControl: false,
    setHeaders(response, path) {
      response.setHeader('content-security-policy', CONSOLE_CSP);
      response.setHeader('x-content-type-options', 'nosniff');
      response.setHeader('referrer-policy', 'no-referrer');
      response.setHeader('cache-control', cacheControlOf(path));
    },
  });
  app.get('/console', (_request, reply) => reply.redirect('/console/', 301));
  // Browsers ask for the site's icon here on any page they show, JSON answers and /docs included;
  // the console's own pages link it under /console/.
  app.get('/favicon.ico', (_request, reply) => reply.sendFile('favicon.svg'));
}
