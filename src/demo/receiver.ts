import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signedHeaders } from '../webhooks/signing.js';

export interface DemoWebhook {
  type: string;
  segmentId: string;
  profileId: string;
  verified: boolean;
}

function verify(secret: string, headers: Record<string, unknown>, body: string): boolean {
  const id = String(headers['webhook-id'] ?? '');
  const timestamp = Number(headers['webhook-timestamp']);
  const presented = String(headers['webhook-signature'] ?? '');
  const expected = signedHeaders(secret, id, timestamp, body)['webhook-signature'] ?? '';
  return (
    presented.length === expected.length &&
    timingSafeEqual(Buffer.from(presented), Buffer.from(expected))
  );
}

/**
 * The local receiver `cds demo` points its webhooks at, so a newcomer sees segment changes arrive
 * and that their signatures check out.
 */
export class DemoReceiver {
  readonly received: DemoWebhook[] = [];
  onWebhook: ((webhook: DemoWebhook) => void) | null = null;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(secret: string): Promise<DemoReceiver> {
    let receiver: DemoReceiver | undefined;
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const parsed = JSON.parse(body) as {
          type: string;
          data: { segment_id: string; profile_id: string };
        };
        const webhook = {
          type: parsed.type,
          segmentId: parsed.data.segment_id,
          profileId: parsed.data.profile_id,
          verified: verify(secret, request.headers, body),
        };
        receiver?.received.push(webhook);
        receiver?.onWebhook?.(webhook);
        response.statusCode = webhook.verified ? 204 : 401;
        response.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    receiver = new DemoReceiver(server, `http://127.0.0.1:${port}/webhooks`);
    return receiver;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
