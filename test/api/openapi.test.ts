import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestEnv, type TestEnv } from '../helpers/context.js';
import { listRoutes } from '../helpers/routes.js';

type Json = Record<string, unknown>;

let env: TestEnv;
let document: Json;

beforeAll(async () => {
  env = await openTestEnv({ collector: true });
  const response = await env.app.inject({ method: 'GET', url: '/openapi.json' });
  expect(response.statusCode).toBe(200);
  document = response.json();
});
afterAll(() => env.close());

const operations = () =>
  Object.entries(document.paths as Record<string, Record<string, Json>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ path, method, operation })),
  );

/** Every JSON Schema the document holds: parameters', bodies' and answers'. */
function schemasOf(operation: Json): Json[] {
  const schemas: Json[] = [];
  for (const parameter of (operation.parameters ?? []) as Json[])
    schemas.push(parameter.schema as Json);
  const bodies = [
    operation.requestBody as Json | undefined,
    ...Object.values(operation.responses as Record<string, Json>),
  ];
  for (const body of bodies) {
    const content = (body?.content ?? {}) as Record<string, { schema: Json }>;
    for (const media of Object.values(content)) schemas.push(media.schema);
  }
  return schemas;
}

describe('GET /openapi.json', () => {
  it('is an OpenAPI 3.1 document: paths, operations, parameters, answers and schemes all hold', () => {
    expect(document.openapi).toBe('3.1.0');
    expect(document.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    const components = document.components as { schemas: Json; securitySchemes: Json };
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addSchema({ $id: 'doc', components }, 'doc');
    const ids = new Set<string>();
    for (const { path, method, operation } of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      expect(path, where).toMatch(/^\//);
      expect(['get', 'put', 'post', 'delete', 'options', 'patch', 'head']).toContain(method);
      expect(ids.has(operation.operationId as string), where).toBe(false);
      ids.add(operation.operationId as string);
      // Each {name} of the path is a required path parameter, and no path parameter is extra.
      const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]).sort();
      const pathParameters = ((operation.parameters ?? []) as Json[]).filter(
        (parameter) => parameter.in === 'path',
      );
      expect(pathParameters.map((parameter) => parameter.name).sort(), where).toEqual(templated);
      for (const parameter of pathParameters) expect(parameter.required, where).toBe(true);
      const responses = operation.responses as Record<string, Json>;
      expect(Object.keys(responses).length, where).toBeGreaterThan(0);
      for (const [status, response] of Object.entries(responses)) {
        expect(status, where).toMatch(/^[1-5][0-9][0-9]$/);
        expect(response.description, where).toEqual(expect.any(String));
      }
      for (const requirement of (operation.security ?? []) as Json[]) {
        for (const scheme of Object.keys(requirement)) {
          expect(Object.keys(components.securitySchemes), where).toContain(scheme);
        }
      }
      // Each schema is valid JSON Schema 2020-12 and its references resolve.
      for (const schema of schemasOf(operation)) {
        const resolved = JSON.parse(
          JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/'),
        );
        expect(() => ajv.compile(resolved), `${where}: ${JSON.stringify(schema)}`).not.toThrow();
      }
    }
  });

  it('describes every route the app serves, with its auth and its error answers', async () => {
    const documented = new Set(
      operations().map(({ method, path }) => `${method.toUpperCase()} ${path}`),
    );
    for (const route of await listRoutes(env.app)) {
      const [method, url = ''] = route.split(' ');
      if (url === '*') {
        expect(documented).toContain(`${method} /v1/events`);
        continue;
      }
      if (url.endsWith('*')) {
        const prefix = url.slice(0, -1);
        expect(
          [...documented].some((entry) => entry.startsWith(`${method} ${prefix}`)),
          route,
        ).toBe(true);
        continue;
      }
      const path = url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/(.)\/$/, '$1');
      expect(documented, route).toContain(`${method} ${path}`);
    }
    const paths = document.paths as Record<string, Record<string, Json>>;
    const putWorkspace = paths['/v1/tenants/{tenant}/workspaces/{workspace}']?.put as Json;
    expect(putWorkspace.security).toEqual([{ tenantToken: [] }, { operatorToken: [] }]);
    expect(Object.keys(putWorkspace.responses as Json)).toEqual(
      expect.arrayContaining(['200', '201', '401', '403', '422', '429']),
    );
    expect(JSON.stringify((putWorkspace.requestBody as Json).content)).toContain('allowed_origins');
    const liveStream = paths['/v1/tenants/{tenant}/workspaces/{workspace}/events/stream']
      ?.get as Json;
    const streamed = (liveStream.responses as Record<string, Json>)['200'] as Json;
    expect(Object.keys(streamed.content as Json)).toEqual(['text/event-stream']);
    expect(JSON.stringify(streamed.content)).toContain('outcome');
    expect(streamed.description).toContain('an `error` event holds the error body');
    expect(liveStream.security).toContainEqual({ workspaceToken: [] });
    const securityOf = (path: string) => (paths[path]?.post as Json | undefined)?.security;
    expect(securityOf('/v1/batch')).toEqual([{ writeKey: [] }, { collectorToken: [] }]);
    expect(securityOf('/v1/events/batch')).toEqual([]);
    expect(securityOf('/v1/server/events')).toEqual([{ collectorToken: [] }]);
  });
});

describe('GET /docs', () => {
  it('is an HTML page over the same document, served without a CDN', async () => {
    const page = await env.app.inject({ method: 'GET', url: '/docs' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.body).not.toMatch(/https?:\/\/(unpkg|cdn)/);
    const initializer = await env.app.inject({
      method: 'GET',
      url: '/docs/static/swagger-initializer.js',
    });
    expect(initializer.statusCode).toBe(200);
    const json = await env.app.inject({ method: 'GET', url: '/docs/json' });
    expect(json.json()).toEqual(document);
  });
});
