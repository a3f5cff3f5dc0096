import type { BusConnection } from '../bus/connect.js';
import { streamMaxAgeMs } from '../bus/setup.js';
import { type Context, nowIso } from '../context.js';
import { componentLog } from '../telemetry/log.js';

/** How often an owner reads the stream's max age again, so `cds bus init` resizing it is seen. */
export const RETENTION_READ_MS = 10 * 60 * 1000;

/**
 * Records the events stream's max age in this shard's database, where an erasure reads it to say
 * when the last stream copy of the erased profile's events expires (privacy/audit.ts).
 */
export async function recordStreamRetention(context: Context, bus: BusConnection): Promise<void> {
  const maxAgeMs = await streamMaxAgeMs(bus);
  await context.store.write((session) =>
    session.run('bus_stream_retention_set', { max_age_ms: maxAgeMs, now: nowIso(context) }),
  );
}

/** Reads it now and every RETENTION_READ_MS; a failed read is logged and the last one kept. */
export async function followStreamRetention(
  context: Context,
  bus: BusConnection,
): Promise<() => void> {
  const read = () =>
    recordStreamRetention(context, bus).catch((error: unknown) =>
      componentLog('owner').warn(
        { err: error },
        "the events stream's max age could not be read; erasures keep the last one read",
      ),
    );
  await read();
  const timer = setInterval(read, RETENTION_READ_MS);
  timer.unref();
  return () => clearInterval(timer);
}
