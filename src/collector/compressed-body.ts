import type { Readable } from 'node:stream';
import { Transform } from 'node:stream';
import { createGunzip, createInflate } from 'node:zlib';
import { BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from '../errors.js';

function inflaterFor(coding: string) {
  switch (coding) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    default:
      return null;
  }
}

/**
 * The body of a request as its route reads it: `content-encoding: gzip` or `deflate` inflated on
 * the way, and refused past `limitBytes` of inflated bytes. Inflating stops there, so a small body
 * that would inflate to gigabytes (a zip bomb) costs at most `limitBytes` and is answered 413.
 * Fastify checks `content-length` against `receivedEncodedLength`, the bytes as sent.
 */
export function inflatedBody(
  contentEncoding: string | undefined,
  payload: Readable,
  limitBytes: number,
): Readable {
  const coding = (contentEncoding ?? '').trim().toLowerCase();
  if (coding === '' || coding === 'identity') return payload;
  const inflater = inflaterFor(coding);
  if (!inflater) {
    throw new UnsupportedMediaTypeError(
      `content-encoding ${coding.slice(0, 64)} is not supported: send gzip, deflate or none`,
    );
  }
  let inflatedBytes = 0;
  const limited = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      inflatedBytes += chunk.length;
      if (inflatedBytes > limitBytes) {
        done(
          new PayloadTooLargeError(
            `the body inflates to more than ${limitBytes} bytes, the most this endpoint accepts`,
          ),
        );
        return;
      }
      done(null, chunk);
    },
  });
  let receivedEncodedLength = 0;
  payload.on('data', (chunk: Buffer) => {
    receivedEncodedLength += chunk.length;
  });
  Object.defineProperty(limited, 'receivedEncodedLength', { get: () => receivedEncodedLength });
  const stop = () => {
    payload.unpipe(inflater);
    inflater.destroy();
    // The rest of what the client sends is read and dropped, so the answer still reaches it.
    payload.resume();
  };
  inflater.on('error', (error) => {
    stop();
    limited.destroy(new BadRequestError(`the body is not valid ${coding}: ${error.message}`));
  });
  limited.on('error', stop);
  payload.pipe(inflater).pipe(limited);
  return limited;
}
