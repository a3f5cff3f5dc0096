import type { FastifyReply, FastifyRequest } from 'fastify';

/** Headers a page may read from an answer: the SDK waits as long as a 429's `retry-after` asks. */
const EXPOSED_HEADERS = ['retry-after'];

/**
 * @fastify/cors' options for the preflights of the browser endpoints. Every origin that reaches
 * the plugin is allowed (`checkOrigin` refused the others), so it reflects it.
 */
export const preflightOptions = {
  origin: true,
  // GET for analytics.js's settings and RudderStack's source config; authorization and
  // x-retry-count are what analytics.js sends with its events (analytics-js/routes.ts), the rest
  // what RudderStack's browser SDK v3 sends with its own (its anonymous id, the time it sent,
  // and how often and why it tried before).
  methods: ['GET', 'POST'],
  allowedHeaders: [
    'content-type',
    'content-encoding',
    'x-tenant-id',
    'x-workspace-id',
    'authorization',
    'x-retry-count',
    'anonymousid',
    'sentat',
    'rsa-retry-attempt',
    'rsa-since-first-attempt',
    'rsa-since-last-attempt',
    'rsa-retry-reason',
    'rsa-recovered',
  ],
  exposedHeaders: EXPOSED_HEADERS,
  maxAge: 600,
};

const exposed = EXPOSED_HEADERS.join(', ');

/**
 * The CORS headers of a browser request that is no preflight, as @fastify/cors writes them with
 * `preflightOptions` (a test compares the two). The plugin spreads its options into a new object
 * and reads the route's options twice on every request; on the single-event endpoint that was a
 * twentieth of the request's time.
 */
export function addCorsHeaders(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('vary', 'Origin');
  const origin = request.headers.origin;
  if (origin) reply.header('access-control-allow-origin', origin);
  reply.header('access-control-expose-headers', exposed);
}
