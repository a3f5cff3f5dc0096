import { join } from 'node:path';
import { connectBus } from '../src/bus/connect.js';
import { startLocalCluster } from '../src/bus/local-cluster.js';
import { DEFAULT_SIZING, initBus } from '../src/bus/setup.js';
import { EVENTS_STREAM } from '../src/bus/subjects.js';
import { makeBenchDir } from './setup.js';

/**
 * `npx tsx bench/bus-acks.ts`: what the owners' acknowledgements cost the NATS nodes (issue 37,
 * the pause that halved two-owner runs). Two "owners" each drain 40,000 small messages of their
 * tenant as owners did before issue 37 (fetch 5,000 with `max_ack_pending` 5,000, a 150 ms pause
 * for the batch, then ack and flush), once acknowledging every message (`explicit`), once only
 * the last (`all`). After each flush it reads the consumer's `num_ack_pending`: acks the server
 * has received and not yet applied, which hold the next fetch back at `max_ack_pending`.
 */
const PER_TENANT = 40_000;
const FETCH = 5_000;
const BATCH_MS = 150;

const natsDir = join(makeBenchDir('cds-bench-acks-'), 'nats');
const nats = await startLocalCluster(natsDir);
try {
  const admin = await connectBus(nats.settings('admin'), 'admin');
  await initBus(admin, DEFAULT_SIZING);
  const jsm = await admin.manager();
  const { AckPolicy, DeliverPolicy } = await import('@nats-io/jetstream');
  const line = `${'x'.repeat(480)}\n`;
  for (const mode of ['explicit', 'all'] as const) {
    const tenants = [`${mode}-1`, `${mode}-2`];
    for (const tenant of tenants) {
      for (let start = 0; start < PER_TENANT; start += 1000)
        await Promise.all(
          Array.from({ length: 1000 }, (_, i) =>
            admin.js.publish(`cds.events.${tenant}.w`, line, { msgID: `${tenant}-${start + i}` }),
          ),
        );
      await jsm.consumers.add(EVENTS_STREAM, {
        durable_name: `own-${tenant}`,
        filter_subject: `cds.events.${tenant}.>`,
        ack_policy: mode === 'all' ? AckPolicy.All : AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        max_ack_pending: FETCH,
      });
    }
    const drain = async (tenant: string) => {
      const bus = await connectBus(nats.settings('admin'), 'admin');
      const consumer = await bus.js.consumers.get(EVENTS_STREAM, `own-${tenant}`);
      const unapplied: number[] = [];
      const fetchMs: number[] = [];
      for (let drained = 0; drained < PER_TENANT; ) {
        const started = performance.now();
        const messages: { ack(): void }[] = [];
        for await (const message of await consumer.fetch({ max_messages: FETCH, expires: 1000 }))
          messages.push(message);
        fetchMs.push(performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, BATCH_MS));
        if (mode === 'all') messages.at(-1)?.ack();
        else for (const message of messages) message.ack();
        await bus.nc.flush();
        unapplied.push((await jsm.consumers.info(EVENTS_STREAM, `own-${tenant}`)).num_ack_pending);
        drained += messages.length;
      }
      await bus.close();
      return { unapplied, fetchMs };
    };
    const started = performance.now();
    const runs = await Promise.all(tenants.map(drain));
    const seconds = (performance.now() - started) / 1000;
    const unapplied = runs.flatMap((run) => run.unapplied);
    const fetches = runs.flatMap((run) => run.fetchMs);
    console.log(
      `${mode}: ${(2 * PER_TENANT).toLocaleString('en')} messages in ${seconds.toFixed(2)} s; acks not yet applied right after each flush: max ${Math.max(...unapplied)}, mean ${Math.round(unapplied.reduce((a, b) => a + b, 0) / unapplied.length)} of ${FETCH}; fetch of ${FETCH} slowest ${Math.max(...fetches).toFixed(0)} ms`,
    );
  }
  await admin.close();
} finally {
  await nats.stop();
}
