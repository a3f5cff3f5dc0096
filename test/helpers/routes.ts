import type { FastifyInstance } from 'fastify';

/**
 * Every route an app serves, as `METHOD /path/:param`, read from Fastify's own route tree so that
 * a route added later is listed without anyone touching a test. HEAD routes are left out: Fastify
 * adds one to each GET and runs the GET's handler.
 */
export async function listRoutes(app: FastifyInstance): Promise<string[]> {
  await app.ready();
  // Lines look like `│   ├── /segment (GET, HEAD)`: four columns a level, the segment appended
  // to its parent's path.
  const line = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([A-Z, -]+)\))?$/;
  const parents: string[] = [];
  const routes: string[] = [];
  for (const text of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = line.exec(text);
    if (!match) continue;
    const depth = (match[1] ?? '').length / 4;
    const path = (parents[depth - 1] ?? '') + (match[2] ?? '');
    parents[depth] = path;
    parents.length = depth + 1;
    for (const method of (match[3] ?? '').split(', ')) {
      if (/^[A-Z]+$/.test(method) && method !== 'HEAD') routes.push(`${method} ${path}`);
    }
  }
  return routes.sort();
}
