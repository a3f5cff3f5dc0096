import { operatorToken } from '../../src/tenancy/operator.js';
import { openTestEnvIn } from './context.js';

export type AdminRequest = [method: string, path: string, body: unknown];

/**
 * Sends operator requests to the app over an existing data dir in this process, then closes it:
 * setup that tests used to do by starting `cds serve` for a few requests. Each must succeed.
 */
export async function adminRequests(dir: string, requests: AdminRequest[]): Promise<void> {
  const env = await openTestEnvIn(dir);
  try {
    const token = operatorToken(env.context.dataDir.masterKey);
    for (const [method, url, payload] of requests) {
      const response = await env.app.inject({
        method: method as 'PUT',
        url,
        headers: { authorization: `Bearer ${token}` },
        payload: payload as Record<string, unknown>,
      });
      if (response.statusCode >= 300)
        throw new Error(`${method} ${url}: ${response.statusCode} ${response.body}`);
    }
  } finally {
    await env.close({ keepDir: true });
  }
}
