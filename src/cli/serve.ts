import type { FastifyInstance } from 'fastify';
import { buildApp } from '../api/app.js';
import type { Context } from '../context.js';

export interface RunningServer {
  app: FastifyInstance;
  url: string;
  /** Stops accepting requests, lets those under way finish, then closes the database. */
  close(): Promise<void>;
}

export async function startServer(context: Context, logger: boolean): Promise<RunningServer> {
  const app = buildApp(context, { logger: logger ? { level: 'info' } : false });
  const address = await app.listen({ port: context.config.port, host: context.config.host });
  let closing: Promise<void> | undefined;
  return {
    app,
    url: address,
    close() {
      closing ??= (async () => {
        await app.close();
        await context.store.close();
      })();
      return closing;
    },
  };
}

/** Keeps the process up until SIGINT or SIGTERM, then closes cleanly. */
export function closeOnSignals(server: RunningServer): Promise<void> {
  return new Promise((resolve) => {
    const stop = (): void => {
      server.close().then(resolve, (error: unknown) => {
        process.stderr.write(`error while closing: ${(error as Error).message}\n`);
        process.exitCode = 1;
        resolve();
      });
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
