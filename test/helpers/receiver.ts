import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  headers: Record<string, string>;
  body: string;
}

/**
 * A local webhook receiver that records every request. It answers each request with the next
 * status of `script`, then 200 once the script is used up.
 */
export class Receiver {
  readonly received: ReceivedWebhook[] = [];
  readonly script: number[] = [];
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<Receiver> {
    let receiver: Receiver | undefined;
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        receiver?.received.push({
          headers: Object.fromEntries(
            Object.entries(request.headers).map(([key, value]) => [key, String(value)]),
          ),
          body: Buffer.concat(chunks).toString('utf8'),
        });
        response.statusCode = receiver?.script.shift() ?? 200;
        response.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    receiver = new Receiver(server, `http://127.0.0.1:${port}/hooks`);
    return receiver;
  }

  bodies(): { type: string; timestamp: string; data: Record<string, unknown> }[] {
    return this.received.map((request) => JSON.parse(request.body));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
