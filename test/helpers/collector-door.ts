import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Exchange {
  method: string;
  url: string;
  origin: string | undefined;
  /** The request's headers as the client sent them. */
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
  answer: string;
}

export async function listen(server: Server, port = 0): Promise<number> {
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

export async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

/**
 * Stands between the page and the collector: it records every request the browser really sends
 * (a CORS preflight included, which the browser's own events do not show), and going down makes
 * the collector unreachable for the page while cds keeps running.
 */
export class CollectorDoor {
  readonly exchanges: Exchange[] = [];
  private server: Server | null = null;
  private port = 0;

  constructor(private readonly target: string) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async open(): Promise<void> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', async () => {
        const body = Buffer.concat(chunks);
        const upstream = await fetch(`${this.target}${request.url}`, {
          method: request.method,
          headers: forwarded(request.headers),
          body: request.method === 'GET' || request.method === 'HEAD' ? undefined : body,
        });
        const answer = Buffer.from(await upstream.arrayBuffer());
        this.exchanges.push({
          method: request.method ?? '',
          url: request.url ?? '',
          origin: request.headers.origin,
          headers: request.headers,
          body: body.toString(),
          status: upstream.status,
          answer: answer.toString(),
        });
        const headers = Object.fromEntries(
          [...upstream.headers].filter(
            ([name]) => !['content-encoding', 'content-length'].includes(name),
          ),
        );
        response.writeHead(upstream.status, headers);
        response.end(answer);
      });
    });
    this.port = await listen(server, this.port);
    this.server = server;
  }

  async shut(): Promise<void> {
    if (this.server) await close(this.server);
    this.server = null;
  }
}

function forwarded(headers: IncomingHttpHeaders): Record<string, string> {
  const kept: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === 'string' && !['host', 'connection', 'content-length'].includes(name)) {
      kept[name] = value;
    }
  }
  return kept;
}
