import type { FastifyInstance, FastifySchema } from 'fastify';
import { z } from 'zod';
import type { Access } from '../tenancy/access.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route answers server-sent events: its 200 schema is that of each `data:` line. */
    eventStream?: boolean;
  }
}

/** A route as the document describes it. */
interface DocumentedRoute {
  method: string;
  url: string;
  schema: FastifySchema | undefined;
  access: Access | undefined;
  eventStream: boolean;
}

type JsonSchema = Record<string, unknown>;

const routesOf = new WeakMap<FastifyInstance, DocumentedRoute[]>();

/**
 * Keeps every route the app will serve, as Fastify declares it. Called before the first route,
 * so the document built from them (`serveApiDocument`) leaves none out.
 */
export function recordRoutes(app: FastifyInstance): void {
  const routes: DocumentedRoute[] = [];
  routesOf.set(app, routes);
  app.addHook('onRoute', (options) => {
    for (const method of [options.method].flat()) {
      if (method === 'HEAD') continue;
      routes.push({
        method,
        url: options.url,
        schema: options.schema,
        access: (options.config as { access?: Access } | undefined)?.access,
        eventStream:
          (options.config as { eventStream?: boolean } | undefined)?.eventStream === true,
      });
    }
  });
}

const errorSchema: JsonSchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'string', description: 'snake_case, stable: what to branch on' },
        message: { type: 'string', description: 'for people; a 422 names the field first' },
        details: { description: 'what the code needs: the fields at fault, the origin refused, …' },
      },
    },
  },
};

const securitySchemes = {
  tenantToken: { type: 'http', scheme: 'bearer', description: 'A tenant token, cpt_…' },
  workspaceToken: {
    type: 'http',
    scheme: 'bearer',
    description: 'A workspace token, cpw_…: reads one workspace',
  },
  operatorToken: {
    type: 'http',
    scheme: 'bearer',
    description: 'The operator credential, cpo_… (derived from master.key)',
  },
  collectorToken: { type: 'http', scheme: 'bearer', description: 'A collector token, cpc_…' },
  writeKey: {
    type: 'http',
    scheme: 'basic',
    description: 'A collector token of one workspace as the username, an empty password',
  },
};

/** Who may call a route, by its declared access or, for the collector, by its path. */
function securityOf(route: DocumentedRoute): Record<string, string[]>[] | undefined {
  const schemes = (...names: (keyof typeof securitySchemes)[]) =>
    names.map((name) => ({ [name]: [] }));
  switch (route.access) {
    case 'operator':
      return schemes('operatorToken');
    case 'tenant-token':
      return schemes('tenantToken', 'operatorToken');
    case 'tenant-member':
    case 'workspace-member':
      return schemes('tenantToken', 'workspaceToken', 'operatorToken');
    case 'any-token':
      return schemes('tenantToken', 'workspaceToken', 'collectorToken', 'operatorToken');
  }
  if (route.url === '/metrics') return schemes('operatorToken');
  if (route.url.startsWith('/v1/server/')) return schemes('collectorToken');
  if (/^\/v1\/(batch|track|identify|page|screen|alias|group)$/.test(route.url)) {
    return schemes('writeKey', 'collectorToken');
  }
  return undefined;
}

function toJsonSchema(schema: unknown, io: 'input' | 'output'): JsonSchema {
  if (!(schema instanceof z.ZodType)) return {};
  try {
    const { $schema: _dialect, ...converted } = z.toJSONSchema(schema, {
      target: 'draft-2020-12',
      io,
      unrepresentable: 'any',
    }) as JsonSchema;
    return converted;
  } catch {
    return {};
  }
}

function parametersOf(schema: unknown, where: 'path' | 'query'): JsonSchema[] {
  const converted = toJsonSchema(schema, 'input');
  const properties = (converted.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((converted.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    schema: property,
  }));
}

/** `/v1/tenants/:tenant/segments` → `/v1/tenants/{tenant}/segments`; `*` → `{path}`. */
function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, '{path}');
}

const ERROR_STATUSES: Record<string, string> = {
  '400': 'The body or URL does not parse',
  '401': 'No token, or an unknown or revoked one',
  '403': 'The token may not do this (another tenant or workspace, a read-only token)',
  '404': 'No such resource',
  '409': 'A conflict: the id exists, or a quota is reached',
  '413': 'The body is larger than the endpoint takes (inflated)',
  '415': 'The body is not of a content type the endpoint takes',
  '422': 'The body or query fails validation; the message names the field',
  '429': 'Rate limited; retry after `retry-after` seconds',
  '503': 'Shutting down, or the database is unavailable',
};

function operationOf(route: DocumentedRoute, path: string): JsonSchema {
  const schema = (route.schema ?? {}) as Record<string, unknown>;
  const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1] as string);
  const declared = parametersOf(schema.params, 'path');
  const parameters = [
    ...templated.map(
      (name) =>
        declared.find((parameter) => parameter.name === name) ?? {
          name,
          in: 'path',
          required: true,
          schema: { type: 'string' },
        },
    ),
    ...parametersOf(schema.querystring, 'query'),
  ];
  const responses: Record<string, JsonSchema> = {};
  const declaredResponses = (schema.response ?? {}) as Record<string, unknown>;
  for (const [status, response] of Object.entries(declaredResponses)) {
    const type = route.eventStream && status === '200' ? 'text/event-stream' : 'application/json';
    responses[status] = {
      description:
        type === 'text/event-stream'
          ? 'Server-sent events: each `line` event holds one item in `data:`, its `id:` a cursor to resume from (`Last-Event-ID`). The token is checked before every message: once it may no longer read the stream (revoked, or its tenant or workspace gone), an `error` event holds the error body and the stream ends'
          : `${status} answer`,
      content: { [type]: { schema: toJsonSchema(response, 'output') } },
    };
  }
  if (Object.keys(responses).length === 0) responses['200'] = { description: 'The answer' };
  const security = securityOf(route);
  const statuses = ['400', '404', '413', '415', '422', '429', '503'];
  if (security) statuses.push('401', '403');
  if (route.method === 'PUT' || route.method === 'POST') statuses.push('409');
  for (const status of statuses.sort()) {
    responses[status] ??= {
      description: ERROR_STATUSES[status],
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
  }
  return {
    operationId: `${route.method.toLowerCase()} ${path}`,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(schema.body !== undefined
      ? {
          requestBody: {
            content: { 'application/json': { schema: toJsonSchema(schema.body, 'input') } },
          },
        }
      : {}),
    responses,
    ...(security ? { security } : { security: [] }),
  };
}

/** The OpenAPI 3.1 document of every route recorded on `app`. */
function buildDocument(routes: DocumentedRoute[]): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    // The CORS plugin's catch-all preflight: documented on the browser endpoints it answers.
    const urls = route.url === '*' ? ['/v1/events', '/v1/events/batch'] : [route.url];
    for (const url of urls) {
      const path = openApiPath(url);
      paths[path] ??= {};
      paths[path][route.method.toLowerCase()] = operationOf(route, path);
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'cds: customer data service',
      version: '1',
      description:
        'Control plane and event collection. Every error answers the Error body; docs/ in the repository holds the decisions behind each rule.',
    },
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: { schemas: { Error: errorSchema }, securitySchemes },
  };
}

/**
 * `GET /openapi.json` and the docs page at `GET /docs` (swagger-ui's own assets, nothing from a
 * CDN). Both are public: the document says what the API is, never what it holds. Registered
 * after every other route; the document is filled in once the app is ready, when every route,
 * the collector's plugins' included, has been declared.
 */
export function serveApiDocument(app: FastifyInstance): void {
  const routes = routesOf.get(app);
  if (!routes) throw new Error('recordRoutes must run before the first route is declared');
  const document: JsonSchema = {};
  app.addHook('onReady', async () => {
    Object.assign(document, buildDocument(routes));
  });
  // swagger-ui brings a static file server; it is loaded where the document is served, when the
  // app gets ready, not by every process that imports the app (the CLI's admin commands).
  app.register(async (docs) => {
    const [{ default: swagger }, { default: swaggerUi }] = await Promise.all([
      import('@fastify/swagger'),
      import('@fastify/swagger-ui'),
    ]);
    await docs.register(swagger, {
      mode: 'static',
      specification: { document: document as never },
    });
    await docs.register(swaggerUi, { routePrefix: '/docs' });
    docs.get('/openapi.json', async () => document);
  });
}
