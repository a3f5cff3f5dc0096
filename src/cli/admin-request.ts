import { AppError } from '../errors.js';

export interface GlobalOptions {
  dataDir?: string;
  server?: string;
  token?: string;
  json?: boolean;
}

export interface AdminRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
}

/** Sends admin requests to the API, in-process or to a running `cds serve`. */
export type AdminClient = <T = unknown>(request: AdminRequest) => Promise<T>;

export function urlOf(request: AdminRequest): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(request.query ?? {})) {
    if (value !== undefined) query.set(key, String(value));
  }
  const text = query.toString();
  return text ? `${request.path}?${text}` : request.path;
}

export function answer<T>(status: number, text: string): T {
  const body = text ? JSON.parse(text) : null;
  if (status >= 400) {
    const error = body?.error ?? { code: 'http_error', message: `HTTP ${status}` };
    throw new AppError(status, error.code, error.message, error.details);
  }
  return body as T;
}
