/**
 * The layers of src/, bottom first: a module may import from its own part and from the layers
 * below it, never from a layer above, and parts of one layer do not import each other. Run by
 * `npm run lint` (`lint:layers`), so an import that runs back up the layers fails the lint.
 *
 * The order is what the code needs: each layer builds on the ones under it. A piece two layers
 * share lives in the lower one (or lower still), never in the one that happens to use it first.
 *
 * - base: the files directly in src/ (errors, clock, ids, config, backoff, durable writes, the
 *   landing-file names, tenant keys, …). They know nothing of the store or any service.
 * - telemetry (logs, Prometheus series) and http (what every Fastify app shares below the api:
 *   the body limit, the error code a refused reply carried): used by the store and the collector.
 * - store: the DuckDB file and its sessions; bus: the NATS JetStream connection of cluster mode
 *   (subjects, the stream and buckets, the server configuration), which knows nothing of the store.
 * - context: src/context.ts alone, the services every domain function takes (it names the Store
 *   type, so it sits above the store although it lives beside the base files).
 * - tenancy: tenants, workspaces, tokens, quotas.
 * - identity, catalog: profiles and identifiers; the event-type catalogue. Both check tenancy.
 * - metrics (reads the catalogue) and quarantine (landing lines ingest set aside; normalises
 *   identifiers to scrub erased ones).
 * - segments (predicates over metrics, members from identity), privacy (erasure, which scrubs the
 *   quarantine) and webhooks (the outbox segments fill).
 * - ingest: turns landing files into profiles, metrics and segment changes, and retries purges.
 * - collector: the HTTP intake that writes landing files; below the api, which mounts it.
 * - import: history files through the collector's checks into landing files the ingest engine takes.
 * - backup: copies the store, the landing files and the quarantine.
 * - shards: cluster mode's owners: consuming a shard's tenants from the bus into the store, the
 *   shard map, moves and forwarding to the owner of a tenant.
 * - api and demo: the HTTP service over everything above; the demo's event generator.
 * - cli: the commands, at the top.
 *
 * Type-only imports count too (`tsPreCompilationDeps`): a type that runs back up the layers ties
 * the layers together as much as a value does. And no module imports itself through a cycle.
 */

const LAYERS = [
  ['base'],
  ['telemetry', 'http'],
  ['store', 'bus'],
  ['context'],
  ['tenancy'],
  ['identity', 'catalog'],
  ['metrics', 'quarantine'],
  ['segments', 'privacy', 'webhooks'],
  ['ingest'],
  ['collector'],
  ['import'],
  ['backup'],
  ['shards'],
  ['api', 'demo'],
  ['cli'],
];

/** The modules of a part: a folder of src/, or one of the two kinds of file directly in src/. */
function pathOf(part) {
  if (part === 'base') return '^src/(?!context\\.ts$)[^/]+$';
  if (part === 'context') return '^src/context\\.ts$';
  return `^src/${part}/`;
}

const everyPart = LAYERS.flat();

function upwardRule(layer, index) {
  const above = LAYERS.slice(index + 1).flat();
  const below = LAYERS.slice(0, index).flat();
  return {
    name: `layer-${layer.join('-')}`,
    severity: 'error',
    comment: `${layer.join(', ')} may import only from ${below.join(', ') || 'nothing else in src'}: a shared piece goes down to the layer both sides can reach (see the layers at the top of .dependency-cruiser.cjs)`,
    from: { path: layer.map(pathOf) },
    to: { path: above.map(pathOf) },
  };
}

function peerRules(layer) {
  return layer.map((part) => ({
    name: `peers-${part}`,
    severity: 'error',
    comment: `${part} does not import ${layer.filter((other) => other !== part).join(', ')}, which sit in its own layer; move the shared piece down`,
    from: { path: pathOf(part) },
    to: { path: layer.filter((other) => other !== part).map(pathOf) },
  }));
}

module.exports = {
  forbidden: [
    ...LAYERS.slice(0, -1).map(upwardRule),
    ...LAYERS.filter((layer) => layer.length > 1).flatMap(peerRules),
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'a module imports itself through others: split out what both need',
      from: {},
      to: { circular: true },
    },
    {
      name: 'in-a-layer',
      severity: 'error',
      comment: 'every module of src/ belongs to a layer: add its folder to LAYERS',
      from: { path: '^src/', pathNot: everyPart.map(pathOf) },
      to: {},
    },
    {
      name: 'to-a-layer',
      severity: 'error',
      comment: 'every module of src/ belongs to a layer: add its folder to LAYERS',
      from: {},
      to: { path: '^src/', pathNot: everyPart.map(pathOf) },
    },
  ],
  options: {
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
