import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Context } from '../../context.js';
import { TooManyStreamsError, ValidationError } from '../../errors.js';
import { idSchema } from '../../ids.js';
import {
  LINE_OUTCOMES,
  LINE_SOURCES,
  type LiveEventFilters,
  type LiveScope,
  liveEventSchema,
  liveEventsAfter,
  liveEventsPage,
  newestLiveSeq,
  seqOfCursor,
} from '../../ingest/live-events.js';
import { type LiveStreamState, STREAM_CHUNK, serveLiveStream } from '../live-stream.js';
import { pagingQuery, workspaceParams } from '../schemas.js';

/** How many streams one token may hold open at once. */
export const STREAMS_PER_TOKEN = 5;

const filterQuery = z.object({
  name: z.string().min(1).max(200).optional(),
  profile_id: idSchema.optional(),
  outcome: z.enum(LINE_OUTCOMES).optional(),
  source: z.enum(LINE_SOURCES).optional(),
});

type FilterQuery = z.infer<typeof filterQuery>;

function filtersOf(query: FilterQuery): LiveEventFilters {
  return {
    name: query.name,
    profileId: query.profile_id,
    outcome: query.outcome,
    source: query.source,
  };
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
  /** Takes one of the token's places before any await, so concurrent requests cannot pass 5. */
  const reserveStream = (tokenId: string): (() => void) => {
    const held = streamsByToken.get(tokenId) ?? 0;
    if (held >= STREAMS_PER_TOKEN) throw new TooManyStreamsError(STREAMS_PER_TOKEN);
    streamsByToken.set(tokenId, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (streamsByToken.get(tokenId) ?? 1) - 1;
      if (left > 0) streamsByToken.set(tokenId, left);
      else streamsByToken.delete(tokenId);
    };
  };
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
      const release = reserveStream(request.principal.tokenId);
      try {
        const resumeFrom = request.headers['last-event-id'];
        const stream: LiveStreamState = {
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
        const close = serveLiveStream(context, request, reply, stream, first, (closed) => {
          openStreams.delete(closed);
          release();
        });
        openStreams.add(close);
      } catch (error) {
        release();
        throw error;
      }
    },
  );
}
