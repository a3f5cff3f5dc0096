import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface DemoWebhook {
  type: string;
  segmentId: string;
  profileId: string;
  verified: boolean;
}

/**
 * Checks a delivery the way a receiver of ours would, with the public `standardwebhooks` package
 * (design §17): signature over the exact bytes, timestamp within 5 minutes.
 */
function verify(secret: string, headers: IncomingHttpHeaders, body: string): boolean {
  const presented: Record<string, string> = {};
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    const value = headers[name];
    if (typeof value === 'string') presented[name] = value;
  }
  try {
    new Webhook(secret).verify(body, presented);
    return true;
  } catch {
    return false;
  }
}

/** A body that is not the JSON cds sends is shown as unreadable, not thrown in the server. */
function parsedBody(
  body: string,
): { type?: unknown; data?: { segment_id?: unknown; profile_id?: unknown } } | null {
  try {
    const value: unknown = JSON.parse(body);
    return typeof value === 'object' && value !== null ? value : null;
  } catch {
    return null;
  }
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
        const parsed = parsedBody(body);
        const webhook = {
          type: String(parsed?.type ?? 'unreadable'),
          segmentId: String(parsed?.data?.segment_id ?? ''),
          profileId: String(parsed?.data?.profile_id ?? ''),
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
