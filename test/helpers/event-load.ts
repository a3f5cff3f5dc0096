import { setTimeout as sleep } from 'node:timers/promises';

export interface LoadTarget {
  tenant: string;
  workspace: string;
}

export interface LoadOptions {
  /** Where to send; read before every request, so a restarted collector's new URL is used. */
  collectors: () => string[];
  targets: LoadTarget[];
  /** Distinguishes this run's event ids from every other run's. */
  runId: string;
  batchSize?: number;
  /** Pause between the batches of one sender. */
  pauseMs?: number;
  /** How long one batch is retried, against the collectors in turn, before it is given up. */
  retryBudgetMs?: number;
}

export interface LoadResult {
  /** Event ids a collector acknowledged with a 2xx, per tenant. */
  acked: Map<string, Set<string>>;
  /** Batches no collector acknowledged within the retry budget. */
  givenUp: number;
  /** Failed attempts that were retried (a collector down, a 503 during a fail-over). */
  retries: number;
}

export interface RunningLoad {
  /** Event ids acknowledged so far, all tenants together: how far the load has gone. */
  ackedCount(): number;
  /** Stops sending new batches and resolves once every batch in flight has an answer. */
  stop(): Promise<LoadResult>;
}

/**
 * A client of the browser batch endpoint, one sender per tenant and collector: a batch that
 * fails (no answer, or not 2xx) is sent again with the same event ids to the next collector,
 * and its ids count as acknowledged only on a 2xx, minus the events it rejected.
 */
export function startLoad(options: LoadOptions): RunningLoad {
  const batchSize = options.batchSize ?? 50;
  const pauseMs = options.pauseMs ?? 200;
  const retryBudgetMs = options.retryBudgetMs ?? 60_000;
  const result: LoadResult = { acked: new Map(), givenUp: 0, retries: 0 };
  for (const target of options.targets) result.acked.set(target.tenant, new Set());
  let running = true;
  let sequence = 0;

  const send = async (target: LoadTarget, preferred: number) => {
    const events = Array.from({ length: batchSize }, () => {
      sequence += 1;
      return {
        envelop_version: '1.0',
        id: `${target.tenant}-${options.runId}-${sequence}`,
        name: 'page_view',
        tenant_id: target.tenant,
        workspace_id: target.workspace,
        anon_id: `cookie:v${sequence % 97}`,
        occured_at: new Date().toISOString(),
        properties: { n: sequence },
      };
    });
    const body = JSON.stringify({ events });
    const deadline = Date.now() + retryBudgetMs;
    for (let attempt = 0; Date.now() < deadline; attempt += 1) {
      const urls = options.collectors().filter((url) => url !== '');
      const url = urls[(preferred + attempt) % Math.max(1, urls.length)];
      if (url) {
        const answer = await fetch(`${url}/v1/events/batch`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-tenant-id': target.tenant,
            'x-workspace-id': target.workspace,
          },
          body,
          // Past a collector's own 20 s retry budget, so its 503 arrives rather than a timeout.
          signal: AbortSignal.timeout(30_000),
        }).then(
          async (response) =>
            response.ok ? ((await response.json()) as { rejected: { index: number }[] }) : null,
          () => null,
        );
        if (answer) {
          const rejected = new Set(answer.rejected.map((entry) => entry.index));
          const acked = result.acked.get(target.tenant) as Set<string>;
          events.forEach((event, index) => {
            if (!rejected.has(index)) acked.add(event.id);
          });
          return;
        }
      }
      result.retries += 1;
      await sleep(200);
    }
    result.givenUp += 1;
  };

  const senders = options.targets.flatMap((target) =>
    [0, 1].map(async (preferred) => {
      while (running) {
        await send(target, preferred);
        await sleep(pauseMs);
      }
    }),
  );
  return {
    ackedCount: () => [...result.acked.values()].reduce((sum, ids) => sum + ids.size, 0),
    async stop() {
      running = false;
      await Promise.all(senders);
      return result;
    },
  };
}
