import { type IncomingMessage, maxHeaderSize, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectionError, FastifyInstance, FastifyRequest } from 'fastify';
import {
  type AppError,
  BadRequestError,
  ExpectationFailedError,
  errorBody,
  HeadersTooLargeError,
  NotFoundError,
  RequestTimeoutError,
  UriTooLongError,
} from '../errors.js';

/**
 * The longest URL (path and query) taken; a longer one is answered 414. The longest a client of
 * cds sends is a profile lookup with an email in its query, far below it.
 */
export const MAX_URL_BYTES = 8 * 1024;

/**
 * How long a connection refused by the HTTP parser is kept after the answer, so the client reads
 * the answer before the close: closing at once with its unread bytes would reset the connection.
 */
export const CLIENT_ERROR_LINGER_MS = 1000;

/** The error body of design §6 as a whole HTTP/1.1 answer, for the paths Fastify never sees. */
function rawAnswer(error: AppError): string {
  const body = JSON.stringify(errorBody(error));
  return [
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    'connection: close',
    '',
    body,
  ].join('\r\n');
}

/** What Node's parser errors carry (Fastify's `ConnectionError` types `rawPacket` as JSON). */
interface ParserError {
  code?: string;
  /** llhttp's fixed description of what it refused, e.g. "Invalid method encountered". */
  reason?: unknown;
  /** The chunk the parser was reading when it failed. */
  rawPacket?: unknown;
}

const REQUEST_LINE_OVER_LIMIT = new RegExp(`^[A-Za-z]+ [^\\r\\n]{${MAX_URL_BYTES}}`);

/**
 * Node counts the request line into its header limit, so a URL over that limit overflows it too.
 * When the failing chunk starts with a request line already longer than MAX_URL_BYTES, the URL
 * is what was too long.
 */
function urlOverflowed(rawPacket: unknown): boolean {
  if (!Buffer.isBuffer(rawPacket)) return false;
  return REQUEST_LINE_OVER_LIMIT.test(rawPacket.subarray(0, MAX_URL_BYTES + 64).toString('latin1'));
}

function clientErrorOf(error: ParserError): AppError {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new RequestTimeoutError();
    case 'HPE_HEADER_OVERFLOW':
      return urlOverflowed(error.rawPacket)
        ? new UriTooLongError(MAX_URL_BYTES)
        : new HeadersTooLargeError(maxHeaderSize);
    default:
      return new BadRequestError(
        `the request is not valid HTTP/1.1${typeof error.reason === 'string' ? ` (${error.reason})` : ''}`,
      );
  }
}

/**
 * Node's `clientError`: the parser refused the bytes before any request existed (a malformed
 * request line or header, a bad content-length, headers over the limit, a timeout). Answered in
 * the error body, then the connection is closed.
 */
export function answerClientError(error: ConnectionError, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) return;
  socket.end(rawAnswer(clientErrorOf(error as ParserError)));
  setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS).unref();
}

/** The Fastify options that keep Node's and Fastify's own answers out of the way of ours. */
export const httpEdgeOptions = {
  clientErrorHandler: answerClientError,
  // Long ids reach validation (422 naming the field); only a URL over the limit is 414.
  routerOptions: { maxParamLength: MAX_URL_BYTES },
  // Node answers a missing Host with an empty 400; the onRequest check below answers it in ours.
  http: { requireHostHeader: false },
};

/**
 * What Node answers by itself on the server: CONNECT (no answer at all) and an `Expect` it cannot
 * meet (an empty 417).
 */
export function answerServerEdges(app: FastifyInstance): void {
  app.server.on('connect', (request: IncomingMessage, socket: Duplex) => {
    socket.end(rawAnswer(new NotFoundError(`no route CONNECT ${request.url ?? ''}`)));
  });
  app.server.on('checkExpectation', (_request, response) => {
    const body = JSON.stringify(errorBody(new ExpectationFailedError()));
    response.writeHead(417, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    response.end(body);
  });
}

/** The checks on the request line Node leaves to us (onRequest, before anything else). */
export function checkRequestLine(request: FastifyRequest): void {
  if (request.url.length > MAX_URL_BYTES) throw new UriTooLongError(MAX_URL_BYTES);
  if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
    throw new BadRequestError('an HTTP/1.1 request must carry a Host header');
  }
}
