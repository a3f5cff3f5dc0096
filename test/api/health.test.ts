import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/api/app.js';
import { operatorToken } from '../../src/tenancy/operator.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import type { Tokens } from '../helpers/tenant.js';

describe('GET /readyz', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeAll(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
    expect(
      (await sendServer(env, tokens.collector, [envelope({ id: 'e1', anon: 'v1' })])).statusCode,
    ).toBe(202);
    await env.ingest();
  });
  afterAll(() => env.close());

  const readyz = (token?: string) =>
    env.app.inject({
      method: 'GET',
      url: '/readyz',
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });

  const PUBLIC = {
    status: 'ready',
    ingest: { backlog_files: 0, lag_seconds: 0, failing: false },
  };

  it.each([
    ['no token', undefined],
    ['a tenant token', 'tenant'],
    ['a workspace token', 'workspace'],
    ['an unknown token', 'cpt_not-a-token'],
  ] as const)(
    'answers only the public part to %s: no path, no counters, no error',
    async (_who, token) => {
      const presented = token === 'tenant' || token === 'workspace' ? tokens[token] : token;
      const response = await readyz(presented);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual(PUBLIC);
      expect(response.body).not.toContain(env.dir);
    },
  );

  it('answers the operator the database path, the counters and the ingest error', async () => {
    const response = await readyz(operatorToken(env.context.dataDir.masterKey));
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      ...PUBLIC,
      database: env.context.dataDir.databasePath,
      ingest: {
        ...PUBLIC.ingest,
        batches: expect.any(Number),
        files: expect.any(Number),
        events_ingested: 1,
        duplicates: 0,
        rejected: 0,
        unparsable_lines: 0,
        dropped_identifiers: expect.any(Number),
        last_batch_at: expect.any(String),
        last_received_at: expect.any(String),
        backlog_bytes: 0,
        quarantined_files: 0,
        quarantined_lines: 0,
        error: null,
        error_since: null,
        failed_attempts: 0,
      },
    });
  });
});

describe('GET /readyz while the ingest indexes are read', () => {
  it('answers 503 indexes_loading until they are read, then 200', async () => {
    const { env } = await openSeededEnv();
    let loading = true;
    const app = buildApp(env.context, { indexesLoading: () => loading });
    try {
      const starting = await app.inject({ method: 'GET', url: '/readyz' });
      expect(starting.statusCode).toBe(503);
      expect(starting.json()).toEqual({
        error: { code: 'indexes_loading', message: expect.stringMatching(/ingest indexes/) },
      });
      loading = false;
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    } finally {
      await app.close();
      await env.close();
    }
  });
});
