import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import {
  AppError,
  BadRequestError,
  errorBody,
  NotFoundError,
  PayloadTooLargeError,
  RateLimitedError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../errors.js';

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
  switch (error.statusCode) {
    case 400:
      return error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY'
        ? BadRequestError.emptyJson()
        : BadRequestError.invalidJson(error.message);
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
    if (known.status >= 500) request.log.error({ err: error }, 'request failed');
    if (known instanceof RateLimitedError) reply.header('retry-after', known.retryAfterSeconds);
    return reply.code(known.status).send(errorBody(known));
  }
  request.log.error({ err: error }, 'unexpected error');
  return reply.code(500).send({ error: { code: 'internal', message: 'internal error' } });
}

export function handleNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const error = new NotFoundError(`no route ${request.method} ${request.url.split('?')[0]}`);
  return reply.code(404).send(errorBody(error));
}
