import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Context } from '../context.js';
import { AppError, errorBody } from '../errors.js';
import {
  type LiveEventAfter,
  type LiveEventFilters,
  type LiveScope,
  liveCursor,
  liveEventsAfter,
} from '../ingest/live-events.js';
import { listenForAdvances } from '../ingest/live-feed.js';
import { listenForAccessChanges } from '../tenancy/access-changes.js';
import { requireWorkspace } from '../tenancy/workspaces.js';
import { recheckAccess } from './auth.js';

/** Between the comment lines that keep an idle connection open through proxies. */
const HEARTBEAT_MS = 15_000;
/** Rows a stream reads at a time while it catches up. */
export const STREAM_CHUNK = 500;

export interface LiveStreamState {
  scope: LiveScope;
  filters: LiveEventFilters;
  /** The seq of the last line sent (or the point the stream starts after). */
  after: number;
}

/**
 * Serves one stream of server-sent events on the request's connection: the lines read so far,
 * then the lines each committed batch of the workspace adds, read only when the in-process
 * notifier says there are some; a comment every 15 s. Answers its `close`, which ends it (the
 * client going away calls it too).
 *
 * The stream's access is checked as a new request's would be before every message after the
 * first, and at once when the tenant's access changes (a token revoked, the tenant's rows
 * removed): a refusal is sent as an `error` event with the error body, and the stream ends.
 */
export function serveLiveStream(
  context: Context,
  request: FastifyRequest,
  reply: FastifyReply,
  stream: LiveStreamState,
  first: LiveEventAfter[],
  onClose: (close: () => void) => void,
): () => void {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  let closed = false;
  // The newest seq a committed batch announced for this workspace; reads catch up to it.
  let target = stream.after;
  let reading: Promise<void> | null = null;

  /** Throws the refusal a new request for this stream would get now. */
  const stillAllowed = async () => {
    await recheckAccess(context, request);
    await context.store.read((session) =>
      requireWorkspace(session, stream.scope.tenantId, stream.scope.workspaceId),
    );
  };
  /** A refusal is said before the end; a fault (a 503, a failed read) only ends the stream. */
  const fail = (error: unknown) => {
    if (closed) return;
    if (error instanceof AppError && error.status < 500)
      raw.write(`event: error\ndata: ${JSON.stringify(errorBody(error))}\n\n`);
    else request.log.warn({ err: error }, 'live event stream failed to read');
    close();
  };
  const send = (rows: LiveEventAfter[]) => {
    for (const { seq, event } of rows) {
      raw.write(`id: ${liveCursor(seq)}\nevent: line\ndata: ${JSON.stringify(event)}\n\n`);
      stream.after = seq;
    }
  };
  const catchUp = async () => {
    while (!closed) {
      // Announced before this read began, so the read sees every row up to it.
      const goal = target;
      const rows = await liveEventsAfter(
        context,
        stream.scope,
        stream.filters,
        stream.after,
        STREAM_CHUNK,
      );
      if (closed) return;
      if (rows.length > 0) {
        await stillAllowed();
        if (closed) return;
        send(rows);
      }
      if (rows.length < STREAM_CHUNK) {
        // Rows up to the goal that the filters left out need not be read again.
        stream.after = Math.max(stream.after, goal);
        return;
      }
    }
  };
  const wake = () => {
    if (reading !== null || closed) return;
    reading = catchUp()
      .catch(fail)
      .finally(() => {
        reading = null;
        if (!closed && target > stream.after) wake();
      });
  };
  const stopListening = listenForAdvances(context.store, (advance) => {
    if (
      advance.tenant_id !== stream.scope.tenantId ||
      advance.workspace_id !== stream.scope.workspaceId
    )
      return;
    target = Math.max(target, advance.last_seq);
    if (target > stream.after) wake();
  });
  const stopWatchingAccess = listenForAccessChanges(context.store, (tenantId) => {
    if (tenantId === stream.scope.tenantId) stillAllowed().catch(fail);
  });
  const heartbeat = setInterval(() => {
    stillAllowed().then(() => {
      if (!closed) raw.write(': heartbeat\n\n');
    }, fail);
  }, HEARTBEAT_MS);
  heartbeat.unref();
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    stopListening();
    stopWatchingAccess();
    onClose(close);
    raw.end();
  };
  raw.on('close', close);
  // The comment sends the headers at once, so a client knows the stream is open.
  raw.write(': connected\n\n');
  send(first);
  // A batch committed between the first read and the listener is read now.
  wake();
  // So is a change of access announced between the request's own check and the listener: under
  // load, a revocation landed there and the stream stayed open until its next message.
  stillAllowed().catch(fail);
  return close;
}
