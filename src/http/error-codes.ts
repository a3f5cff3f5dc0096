import type { FastifyReply } from 'fastify';

/**
 * The error code each refused reply carried, for the metrics counting refusals by reason: set by
 * the one error handler (api/error-handler.ts), read by the collector's refusal counter.
 */
const answeredCodes = new WeakMap<FastifyReply, string>();

export function recordErrorCode(reply: FastifyReply, code: string): void {
  answeredCodes.set(reply, code);
}

export function errorCodeOf(reply: FastifyReply): string | undefined {
  return answeredCodes.get(reply);
}
