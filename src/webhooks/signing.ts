import { createHmac } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

/**
 * Standard Webhooks headers for one attempt: the signature covers `id.timestamp.body` with the
 * base64 key after `whsec_`, over the exact bytes sent.
 */
export function signedHeaders(
  secret: string,
  webhookId: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  const signature = createHmac('sha256', key)
    .update(`${webhookId}.${timestampSeconds}.${body}`)
    .digest('base64');
  return {
    'content-type': 'application/json',
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': `v1,${signature}`,
  };
}
