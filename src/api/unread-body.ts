import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { BODY_LIMIT_BYTES } from '../http/body-limit.js';

/**
 * The most of a body's rest read and dropped before an answer given without it (a 413, or a
 * refusal of the request before its body was read). The answer waits for the rest, so the client
 * has sent all it meant to and reads the answer, and no connection is closed under its writes.
 * Eight times the largest body any route takes: a client that sends more is no client of cds.
 */
export const UNREAD_BODY_DRAIN_BYTES = 8 * BODY_LIMIT_BYTES;

/** How long an answer waits for the rest of its body: a client sending slower is cut off. */
export const UNREAD_BODY_DRAIN_MS = 10_000;

/** Requests whose `100-continue` was not granted: their body does not come. */
const uninvited = new WeakSet<IncomingMessage>();

/**
 * Reads and drops the rest of `body`, then calls `answer`; `close` when the connection must be
 * closed after the answer: the rest is longer than the bound (declared or as it comes), or does
 * not come in time, or never will. A client still sending then may see its writes reset.
 */
function drainThenAnswer(body: IncomingMessage, answer: (close: boolean) => void): void {
  if (body.destroyed || uninvited.has(body)) {
    answer(true);
    return;
  }
  if (Number(body.headers['content-length']) > UNREAD_BODY_DRAIN_BYTES) {
    answer(true);
    return;
  }
  let dropped = 0;
  const finish = (close: boolean) => {
    clearTimeout(timer);
    body.off('data', onData);
    body.off('end', onEnd);
    body.off('close', onClose);
    answer(close);
  };
  const onData = (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > UNREAD_BODY_DRAIN_BYTES) finish(true);
  };
  const onEnd = () => finish(false);
  const onClose = () => finish(true);
  const timer = setTimeout(() => finish(true), UNREAD_BODY_DRAIN_MS);
  timer.unref();
  body.on('data', onData);
  body.once('end', onEnd);
  body.once('close', onClose);
  // Whatever it was piped to (an inflater, a forwarded request) no longer wants it.
  body.unpipe();
  body.resume();
}

/**
 * Every answer given before its request's body was all read (a body too large, a token refused
 * before the body is parsed) waits for the rest of that body, read and dropped up to the bounds
 * above. Answering at once would not do: Fastify closes the connection after a body it refused,
 * and a connection closed with bytes unread is reset, often before the client has read the answer.
 *
 * A request with `Expect: 100-continue` declaring a body larger than any route takes is not asked
 * for its body: it is answered (413, or what is found before) and the connection closed.
 */
export function answerAfterUnreadBody(app: FastifyInstance): void {
  app.server.on('checkContinue', (request: IncomingMessage, response) => {
    if (Number(request.headers['content-length']) > BODY_LIMIT_BYTES) uninvited.add(request);
    else response.writeContinue();
    app.server.emit('request', request, response);
  });
  // A callback hook: every answer passes it, and nearly all find their body read. `complete` is
  // Node's; a request through `inject` (the CLI's in-process admin, tests) has only `readableEnded`.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (request.raw.complete || request.raw.readableEnded) {
      done(null, payload);
      return;
    }
    drainThenAnswer(request.raw, (close) => {
      if (close) reply.header('connection', 'close');
      done(null, payload);
    });
  });
}
