import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import {
  AppError,
  BadRequestError,
  BusUnavailableError,
  errorBody,
  NotFoundError,
  PayloadTooLargeError,
  RateLimitedError,
  TenantMovingError,
  UnsupportedMediaTypeError,
  UriTooLongError,
  ValidationError,
} from '../errors.js';
import { recordErrorCode } from '../http/error-codes.js';
import { MAX_URL_BYTES } from './http-edges.js';

/** Fastify's own errors (body parsing, limits) in terms of our hierarchy. */
function fromFastify(error: FastifyError): AppError | null {
  if (hasZodFastifySchemaValidationErrors(error)) {
    return new ValidationError(
      error.validation.map((issue) => ({
        path:
          issue.instancePath.replace(/^\//, '').replaceAll('/', '.') ||
          (error.validationContext ?? 'body'),
        message: issue.message ?? 'is invalid',
      })),
    );
  }
  switch (error.code) {
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return BadRequestError.emptyJson();
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new BadRequestError('the body is not as long as its content-length says');
    case 'FST_ERR_BAD_URL':
      return new BadRequestError('the URL path is not valid percent-encoded UTF-8');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new UriTooLongError(MAX_URL_BYTES);
  }
  switch (error.statusCode) {
    case 400:
      return BadRequestError.invalidJson(error.message);
    case 404:
      return new NotFoundError(error.message);
    case 413:
      return new PayloadTooLargeError('the body is larger than this endpoint accepts');
    case 415:
      return new UnsupportedMediaTypeError();
    default:
      return null;
  }
}

/** The one place where an error becomes an HTTP answer (design §6). */
export function handleError(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  const known = error instanceof AppError ? error : fromFastify(error);
  if (known) {
    // A 503 is a state the service is in (shutting down, database unavailable), logged once
    // where it starts; each request it refuses is a line without a stack.
    if (known.status >= 500)
      request.log.warn({ code: known.code, status: known.status }, known.message);
    if (
      known instanceof RateLimitedError ||
      known instanceof BusUnavailableError ||
      known instanceof TenantMovingError
    )
      reply.header('retry-after', known.retryAfterSeconds);
    recordErrorCode(reply, known.code);
    return reply.code(known.status).send(errorBody(known));
  }
  request.log.error({ err: error }, 'unexpected error');
  recordErrorCode(reply, 'internal');
  return reply.code(500).send({ error: { code: 'internal', message: 'internal error' } });
}

export function handleNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const error = new NotFoundError(`no route ${request.method} ${request.url.split('?')[0]}`);
  recordErrorCode(reply, error.code);
  return reply.code(404).send(errorBody(error));
}
