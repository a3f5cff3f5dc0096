import type { FastifyInstance } from 'fastify';
import type { CollectorRuntime } from '../collector/runtime.js';
import type { Context } from '../context.js';
import { ValidationError } from '../errors.js';
import type { IngestFailure } from '../ingest/loop-health.js';
import type { ClusterView } from '../shards/cluster-view.js';
import type { StreamReadiness } from '../shards/owner-readiness.js';
import { loneSurrogatePath } from '../well-formed.js';
import { registerAuth } from './auth.js';
import { createBaseApp } from './base-app.js';
import { registerClusterRouting } from './cluster-routing.js';
import { consoleRoutes } from './console.js';
import { serveApiDocument } from './openapi.js';
import { erasureRoutes } from './routes/erasures.js';
import { eventTypeRoutes } from './routes/event-types.js';
import { healthRoutes } from './routes/health.js';
import { identityConfigRoutes } from './routes/identity-config.js';
import { liveEventRoutes } from './routes/live-events.js';
import { metricDefinitionRoutes } from './routes/metric-definitions.js';
import { operatorRoutes } from './routes/operator.js';
import { profileRoutes } from './routes/profiles.js';
import { prometheusRoute } from './routes/prometheus.js';
import { rejectionRoutes } from './routes/rejections.js';
import { segmentRoutes } from './routes/segments.js';
import { tokenRoutes } from './routes/tokens.js';
import { tenantWebhookRoutes } from './routes/webhooks.js';
import { whoamiRoutes } from './routes/whoami.js';
import { workspaceRoutes } from './routes/workspaces.js';

export interface AppOptions {
  /** Log each request (its path only: see createBaseApp). */
  logRequests?: boolean;
  /** Serve the collector endpoints on the same port (design §1: `cds serve`). */
  collector?: CollectorRuntime;
  /** The failing batches of the ingest loop this process runs, for `/readyz`. */
  ingestFailure?: () => IngestFailure | null;
  /** Whether the ingest indexes are still being read as the server starts, for `/readyz`. */
  indexesLoading?: () => boolean;
  /** Cluster mode: the owner's stream backlog, for `/readyz` and `/metrics`; null elsewhere. */
  streamReadiness?: () => StreamReadiness | null;
  /**
   * Serve `/openapi.json` and `/docs` (default). The CLI's in-process admin client leaves them
   * out: no command asks for them, and building the document is much of the app's start.
   */
  apiDocument?: boolean;
  /**
   * Cluster mode: the shard this owner holds, the shard map and the owners; a tenant's request is
   * then answered by the owner of its shard, whichever owner it reached (cluster-routing.ts).
   */
  cluster?: ClusterView;
  /** Serve the web console at `/console/` (`cds serve`; the CLI's in-process client leaves it out). */
  console?: boolean;
}

const CONTROL_PLANE_WRITE = /^\/v1\/(tenants|operator)\//;

/** The whole HTTP surface over one store; `cds serve`, the CLI and the tests all build it here. */
export function buildApp(context: Context, options: AppOptions = {}): FastifyInstance {
  const app = createBaseApp(options.logRequests, () => context.store.unavailable());
  // Before authentication: a request for a tenant of another shard is the owner's to check.
  if (options.cluster) registerClusterRouting(app, context, options.cluster);
  registerAuth(app, context);
  // The control plane keeps strings it is given (placeholders, predicates, names) and hands some
  // to DuckDB as JSON text, which refuses a lone surrogate: refused here, naming the field.
  // This hook and the onSend one below are callback hooks: every request passes them, most with
  // nothing to do, and an async hook costs each a promise and a turn of the microtask queue.
  app.addHook('preValidation', (request, _reply, done) => {
    const path = CONTROL_PLANE_WRITE.test(request.url) ? loneSurrogatePath(request.body) : null;
    if (path !== null) {
      throw ValidationError.field(path, 'holds a lone UTF-16 surrogate, which is not text');
    }
    done();
  });

  const streamReadiness = options.streamReadiness ?? (() => null);
  healthRoutes(app, context, {
    ingestFailure: options.ingestFailure ?? (() => null),
    streamReadiness,
    indexesLoading: options.indexesLoading ?? (() => false),
  });
  prometheusRoute(app, { dataDir: context.dataDir, store: context.store, streamReadiness });
  whoamiRoutes(app);
  operatorRoutes(app, context);
  workspaceRoutes(app, context);
  tokenRoutes(app, context);
  identityConfigRoutes(app, context);
  eventTypeRoutes(app, context);
  metricDefinitionRoutes(app, context);
  segmentRoutes(app, context);
  tenantWebhookRoutes(app, context);
  profileRoutes(app, context);
  erasureRoutes(app, context);
  rejectionRoutes(app, context);
  liveEventRoutes(app, context);

  const collector = options.collector;
  // The collector's modules (its intake pool, CORS, the SDK script) load only where it runs, and
  // the registry publisher only when something is written: not for the CLI's reads.
  if (collector) {
    app.register(async (scope) =>
      (await import('../collector/routes.js')).collectorRoutes(scope, collector),
    );
  }
  if (options.apiDocument !== false) serveApiDocument(app);
  if (options.console) consoleRoutes(app);
  // A changed event type, workspace or token is in this process's collector and in
  // registry.json before the change is acknowledged, so the caller's next event is judged by it,
  // here and in every `cds collect` process (which re-reads the file within a second). Admin
  // commands run without a server take this path too.
  app.addHook('onSend', (request, reply, _payload, done) => {
    // A forwarded write was published by the owner that made it.
    if (
      request.method === 'GET' ||
      reply.statusCode >= 300 ||
      request.forwardedTo ||
      !CONTROL_PLANE_WRITE.test(request.url)
    ) {
      done();
      return;
    }
    const published = collector
      ? collector.refresh()
      : import('../collector/runtime.js').then((runtime) => runtime.publishRegistry(context));
    published.then(() => done(), done);
  });
  return app;
}
