import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Context } from '../../context.js';
import { TooManyStreamsError, ValidationError } from '../../errors.js';
import { idSchema } from '../../ids.js';
import {
  LINE_OUTCOMES,
  type LiveEventFilters,
  type LiveScope,
  liveCursor,
  liveEventSchema,
  liveEventsAfter,
  liveEventsPage,
  newestLiveSeq,
  seqOfCursor,
} from '../../ingest/live-events.js';
import { listenForAdvances } from '../../ingest/live-feed.js';
import { pagingQuery, workspaceParams } from '../schemas.js';

/** How many streams one token may hold open at once. */
export const STREAMS_PER_TOKEN = 5;
/** Between the comment lines that keep an idle connection open through proxies. */
const HEARTBEAT_MS = 15_000;
/** Rows a stream reads at a time while it catches up. */
const STREAM_CHUNK = 500;

const filterQuery = z.object({
  name: z.string().min(1).max(200).optional(),
  profile_id: idSchema.optional(),
  outcome: z.enum(LINE_OUTCOMES).optional(),
});

type FilterQuery = z.infer<typeof filterQuery>;

function filtersOf(query: FilterQuery): LiveEventFilters {
  return { name: query.name, profileId: query.profile_id, outcome: query.outcome };
}

const scopeOf = (params: { tenant: string; workspace: string }): LiveScope => ({
  tenantId: params.tenant,
  workspaceId: params.workspace,
});

/** The seq a `Last-Event-ID` resumes after; a value no stream sent is refused naming the header. */
function resumedSeq(lastEventId: string): number {
  try {
    return seqOfCursor(lastEventId);
  } catch {
    throw ValidationError.field('last-event-id', 'is not an id this stream sent');
  }
}

export function liveEventRoutes(app: FastifyInstance, context: Context): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const base = '/v1/tenants/:tenant/workspaces/:workspace/events';
  const streamsByToken = new Map<string, number>();
  const openStreams = new Set<() => void>();
  // Before the server closes: a stream never ends on its own, so close would wait for it.
  app.addHook('preClose', async () => {
    for (const close of [...openStreams]) close();
  });

  api.get(
    base,
    {
      config: { access: 'workspace-member' },
      schema: {
        params: workspaceParams,
        querystring: pagingQuery.extend(filterQuery.shape),
        response: {
          200: z.object({
            items: z.array(liveEventSchema),
            next_cursor: z.string().nullable(),
            stream_cursor: z.string().nullable().meta({
              description:
                'First page only: send it as Last-Event-ID to stream the lines after this page',
            }),
          }),
        },
      },
    },
    async (request) =>
      liveEventsPage(context, scopeOf(request.params), filtersOf(request.query), {
        limit: request.query.limit,
        cursor: request.query.cursor ?? null,
      }),
  );

  api.get(
    `${base}/stream`,
    {
      config: { access: 'workspace-member', eventStream: true },
      schema: {
        params: workspaceParams,
        querystring: filterQuery,
        headers: z.object({ 'last-event-id': z.string().min(1).optional() }),
        response: { 200: liveEventSchema },
      },
    },
    async (request, reply) => {
      const tokenId = request.principal.tokenId;
      const held = streamsByToken.get(tokenId) ?? 0;
      if (held >= STREAMS_PER_TOKEN) throw new TooManyStreamsError(STREAMS_PER_TOKEN);
      const resumeFrom = request.headers['last-event-id'];
      const stream = {
        scope: scopeOf(request.params),
        filters: filtersOf(request.query),
        after: resumeFrom === undefined ? await newestLiveSeq(context) : resumedSeq(resumeFrom),
      };
      // Read before answering, so an unknown workspace is a 404, not an empty stream.
      const first = await liveEventsAfter(
        context,
        stream.scope,
        stream.filters,
        stream.after,
        STREAM_CHUNK,
      );
      streamsByToken.set(tokenId, held + 1);
      serveStream(request, reply, stream, first, {
        register: (close) => openStreams.add(close),
        release: (close) => {
          openStreams.delete(close);
          const left = (streamsByToken.get(tokenId) ?? 1) - 1;
          if (left > 0) streamsByToken.set(tokenId, left);
          else streamsByToken.delete(tokenId);
        },
      });
    },
  );

  function serveStream(
    request: FastifyRequest,
    reply: FastifyReply,
    stream: { scope: LiveScope; filters: LiveEventFilters; after: number },
    first: Awaited<ReturnType<typeof liveEventsAfter>>,
    hooks: {
      register: (close: () => void) => void;
      release: (close: () => void) => void;
    },
  ): void {
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

    const send = (rows: typeof first) => {
      for (const { seq, event } of rows) {
        raw.write(`id: ${liveCursor(seq)}\nevent: line\ndata: ${JSON.stringify(event)}\n\n`);
        stream.after = seq;
      }
    };
    const catchUp = async () => {
      while (!closed) {
        const rows = await liveEventsAfter(
          context,
          stream.scope,
          stream.filters,
          stream.after,
          STREAM_CHUNK,
        );
        if (closed) return;
        send(rows);
        if (rows.length < STREAM_CHUNK) {
          // Rows up to the target the filters left out need not be read again.
          stream.after = Math.max(stream.after, target);
          return;
        }
      }
    };
    const wake = () => {
      if (reading !== null || closed) return;
      reading = catchUp()
        .catch((error: unknown) => {
          request.log.warn({ err: error }, 'live event stream failed to read');
          close();
        })
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
    const heartbeat = setInterval(() => raw.write(': heartbeat\n\n'), HEARTBEAT_MS);
    heartbeat.unref();
    const close = () => {
      if (closed) return;
      closed = true;
      clearInterval(heartbeat);
      stopListening();
      hooks.release(close);
      raw.end();
    };
    hooks.register(close);
    raw.on('close', close);
    // The comment sends the headers at once, so a client knows the stream is open.
    raw.write(': connected\n\n');
    send(first);
    // A batch committed between the first read and the listener is read now.
    wake();
  }
}
