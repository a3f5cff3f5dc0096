import type { IngestStatus } from '../../src/ingest/status.js';
import { operatorToken } from '../../src/tenancy/operator.js';
import type { TestEnv } from './context.js';

export type OperatorIngest = IngestStatus & {
  failing: boolean;
  error: string | null;
  error_since: string | null;
  failed_attempts: number;
};

/** The operator's view of `/readyz`, whose counters anyone else does not see. */
export async function operatorReadiness(env: TestEnv): Promise<OperatorIngest> {
  const ready = await env.app.inject({
    method: 'GET',
    url: '/readyz',
    headers: { authorization: `Bearer ${operatorToken(env.context.dataDir.masterKey)}` },
  });
  return (ready.json() as { ingest: OperatorIngest }).ingest;
}
