import type { GeneratedEvent } from './generator.js';

/** Sends events to a collector in the generator's order: one batch request per run of one source. */
export async function sendToCollector(
  url: string,
  collectorToken: string,
  events: Iterable<GeneratedEvent>,
  batchSize = 500,
): Promise<{ accepted: number; rejected: number }> {
  const totals = { accepted: 0, rejected: 0 };
  let run: GeneratedEvent[] = [];
  const flush = async () => {
    const [first] = run;
    if (!first) return;
    const browser = first.source === 'browser';
    const response = await fetch(
      `${url}${browser ? '/v1/events/batch' : '/v1/server/events/batch'}`,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(browser
            ? { 'x-tenant-id': first.event.tenant_id, 'x-workspace-id': first.event.workspace_id }
            : { authorization: `Bearer ${collectorToken}` }),
        },
        body: JSON.stringify({ events: run.map((item) => item.event) }),
      },
    );
    if (response.status !== 202)
      throw new Error(`collector answered ${response.status}: ${await response.text()}`);
    const answer = (await response.json()) as { accepted: number; rejected: unknown[] };
    totals.accepted += answer.accepted;
    totals.rejected += answer.rejected.length;
    run = [];
  };
  for (const item of events) {
    const [first] = run;
    const sameRun =
      first === undefined ||
      (first.source === item.source &&
        (item.source === 'server' || first.event.workspace_id === item.event.workspace_id));
    if (!sameRun || run.length >= batchSize) await flush();
    run.push(item);
  }
  await flush();
  return totals;
}
