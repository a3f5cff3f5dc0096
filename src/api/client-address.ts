import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

/**
 * Set by an owner on a request it forwards: the address of the client that sent it, signed with
 * the master key the owners of a cluster share. The owner answering counts refused tokens per
 * client address; without it, every client of the forwarding owner would share that owner's
 * address and one client's bad tokens would lock the others out.
 */
export const FORWARDED_CLIENT = 'x-cds-forwarded-client';

function signature(masterKey: Buffer, address: string): string {
  return createHmac('sha256', masterKey)
    .update(`cds forwarded client v1\0${address}`)
    .digest('base64url');
}

export function forwardedClientValue(masterKey: Buffer, address: string): string {
  return `${address} ${signature(masterKey, address)}`;
}

/** The client's address: the one a fellow owner vouched for, else the connection's. */
export function clientAddress(masterKey: Buffer, request: FastifyRequest): string {
  const header = request.headers[FORWARDED_CLIENT];
  if (typeof header !== 'string') return request.ip;
  const [address, signed, ...rest] = header.split(' ');
  if (!address || !signed || rest.length > 0) return request.ip;
  const expected = Buffer.from(signature(masterKey, address));
  const given = Buffer.from(signed);
  return expected.length === given.length && timingSafeEqual(expected, given)
    ? address
    : request.ip;
}
