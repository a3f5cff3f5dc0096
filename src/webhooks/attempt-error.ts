/**
 * What `last_error` says about a failed attempt: its cause in a few fixed words, never the URL
 * (it may carry a token) and nothing of the request, which holds no secret but is not ours to log.
 */

/** Characters of the receiver's answer kept after `status NNN:`. */
const EXCERPT_CHARS = 120;
/** Bytes read from an answer for its excerpt; the rest is never downloaded. */
const EXCERPT_READ_BYTES = 1024;

const NETWORK_CAUSES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found (DNS)',
  EAI_AGAIN: 'host not found (DNS lookup failed)',
  ECONNRESET: 'connection reset by the receiver',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

/** A fetch that threw: refused, not found, timed out, or another network failure by its code. */
export function thrownAttemptError(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && error.name === 'TimeoutError') {
    return `timeout: no answer within ${timeoutMs} ms`;
  }
  const code = causeCode(error);
  if (code === null) return plainCause(error) ?? 'network error';
  return Object.hasOwn(NETWORK_CAUSES, code)
    ? (NETWORK_CAUSES[code] as string)
    : `network error ${code}`;
}

/** undici puts the socket's error under `cause`, or several (IPv4, IPv6) under `cause.errors`. */
function causeCode(error: unknown): string | null {
  const cause = (error as { cause?: { code?: unknown; errors?: { code?: unknown }[] } }).cause;
  const code = cause?.code ?? cause?.errors?.[0]?.code;
  return typeof code === 'string' && /^[A-Z0-9_]{1,40}$/.test(code) ? code : null;
}

/** undici's own refusals (`bad port`) are a few plain words; anything else may name the host. */
function plainCause(error: unknown): string | null {
  const message = (error as { cause?: { message?: unknown } }).cause?.message;
  return typeof message === 'string' && /^[a-z][a-z ]{0,40}$/i.test(message)
    ? `network error: ${message}`
    : null;
}

/** A non-2xx answer: its status and the start of its body, on one line without controls. */
export async function answeredAttemptError(response: Response): Promise<string> {
  const excerpt = await bodyExcerpt(response);
  return excerpt ? `status ${response.status}: ${excerpt}` : `status ${response.status}`;
}

async function bodyExcerpt(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  try {
    while (bytes < EXCERPT_READ_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      bytes += value.byteLength;
    }
  } catch {
    // The receiver cut its answer short: the status says enough.
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  const text = Buffer.concat(chunks).subarray(0, EXCERPT_READ_BYTES).toString('utf8');
  const oneLine = [...text]
    .map((char) => (shownAsIs(char) ? char : ' '))
    .join('')
    .replace(/\s+/g, ' ')
    .trim();
  return [...oneLine].slice(0, EXCERPT_CHARS).join('');
}

/** Code points that would act on a terminal or reorder text where the outbox is listed. */
const ACTING = new Set([
  0x061c, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067,
  0x2068, 0x2069, 0xfffd,
]);

function shownAsIs(char: string): boolean {
  const code = char.codePointAt(0) ?? 0;
  return code >= 0x20 && !(code >= 0x7f && code <= 0x9f) && !ACTING.has(code);
}
