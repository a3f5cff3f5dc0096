import { ServerUnreachableError, ValidationError } from '../errors.js';
import { type AdminClient, answer, type GlobalOptions, urlOf } from './admin-request.js';
import type { DataDirUse } from './open-context.js';

/**
 * Runs `work` with an admin client. Without `--server` the CLI owns the database for the length of
 * the command and calls the same routes through `inject`, as the operator; with it, the request
 * goes over HTTP with `--token`, or the operator credential derived from the local master key.
 * Only `tenants create` may start a new data dir (`use`); the others need one that holds a database.
 */
export async function withAdminClient<T>(
  options: GlobalOptions,
  work: (client: AdminClient) => Promise<T>,
  use: DataDirUse = 'existing',
): Promise<T> {
  if (options.server) {
    const base = serverBase(options.server);
    const token =
      options.token ??
      (await import('./operator-credential.js')).operatorTokenOfDataDir(options.dataDir);
    return work(async (request) => {
      const response = await fetch(base + urlOf(request), {
        method: request.method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
      }).catch((error: unknown) => {
        const cause =
          (error as Error & { cause?: Error }).cause?.message ?? (error as Error).message;
        throw new ServerUnreachableError(base, cause);
      });
      return answer(response.status, await response.text());
    });
  }
  // The app, its routes and the database are loaded only here: a command that goes to a server,
  // or fails on its flags, starts without them.
  const { withInProcessAdmin } = await import('./in-process-admin.js');
  return withInProcessAdmin(options, work, use);
}

/** `--server` as the base the API paths are appended to. */
function serverBase(server: string): string {
  const url = URL.canParse(server) ? new URL(server) : null;
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw ValidationError.field(
      '--server',
      'must be the URL of a cds serve, e.g. http://127.0.0.1:8080',
    );
  }
  return server.replace(/\/$/, '');
}
