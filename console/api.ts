import { session } from './session.js';

/** The error body of the API (design §6), kept whole so a form can show a field's reason beside it. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown,
  ) {
    super(message);
  }

  /** The reasons the API gave per field (`details: [{path, message}]`), by field path. */
  fieldReasons(): Map<string, string> {
    const reasons = new Map<string, string>();
    if (!Array.isArray(this.details)) return reasons;
    for (const detail of this.details as { path?: unknown; message?: unknown }[])
      if (typeof detail.path === 'string' && typeof detail.message === 'string')
        reasons.set(detail.path, detail.message);
    return reasons;
  }
}

/** `encodeURIComponent` for every id placed in a path: ids are data, never path syntax. */
export function pathOf(strings: TemplateStringsArray, ...ids: string[]): string {
  return strings.reduce(
    (path, part, index) =>
      path + part + (index < ids.length ? encodeURIComponent(ids[index] as string) : ''),
    '',
  );
}

/**
 * One call of the `/v1` API with the session's token in the Authorization header (never in the
 * URL); a non-2xx answer throws ApiError with the API's code and message.
 */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  const token = session.token.value;
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  const parsed: unknown = text === '' ? null : JSON.parse(text);
  if (!response.ok) {
    const error = (parsed as { error?: { code?: string; message?: string; details?: unknown } })
      ?.error;
    throw new ApiError(
      response.status,
      error?.code ?? 'unknown',
      error?.message ?? `${response.status} ${response.statusText}`,
      error?.details,
    );
  }
  return parsed as T;
}
