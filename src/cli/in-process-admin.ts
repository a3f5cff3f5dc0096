import { buildApp } from '../api/app.js';
import { operatorToken } from '../tenancy/operator.js';
import { type AdminClient, answer, type GlobalOptions, urlOf } from './admin-request.js';
import { type DataDirUse, openContext } from './open-context.js';

/**
 * The CLI owns the database for the length of the command and calls the same routes through
 * `inject`, as the operator (or as `--token`). The API document is left out: nothing asks this
 * app for it, and building it is most of the app's start.
 */
export async function withInProcessAdmin<T>(
  options: GlobalOptions,
  work: (client: AdminClient) => Promise<T>,
  use: DataDirUse,
): Promise<T> {
  const context = await openContext({ data_dir: options.dataDir }, use);
  const app = buildApp(context, { apiDocument: false });
  const token = options.token ?? operatorToken(context.dataDir.masterKey);
  try {
    return await work(async (request) => {
      const response = await app.inject({
        method: request.method,
        url: urlOf(request),
        headers: { authorization: `Bearer ${token}` },
        ...(request.body === undefined ? {} : { payload: request.body as object }),
      });
      return answer(response.statusCode, response.body);
    });
  } finally {
    await app.close();
    await context.store.close();
  }
}
