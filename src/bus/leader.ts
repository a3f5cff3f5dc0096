import { setTimeout as sleep } from 'node:timers/promises';
import type { BusConnection } from './connect.js';
import { EVENTS_STREAM } from './subjects.js';

export interface StepDown {
  stream: string;
  /** The node that led the stream before. */
  from: string;
  /** The node elected after it. */
  to: string;
}

interface StepDownAnswer {
  success?: boolean;
  error?: { description?: string };
}

/**
 * Asks the leader of the events stream to step down (`$JS.API.STREAM.LEADER.STEPDOWN`, the
 * request `nats stream cluster step-down` sends) and waits until another node leads it: before a
 * node is stopped for maintenance, so publishes are not left waiting out an election. Admin only.
 */
export async function stepDownStreamLeader(
  bus: BusConnection,
  timeoutMs: number,
  stream = EVENTS_STREAM,
): Promise<StepDown> {
  const manager = await bus.manager();
  const leaderOf = async () => (await manager.streams.info(stream)).cluster?.leader ?? '';
  const from = await leaderOf();
  if (!from) throw new Error(`${stream} has no leader now; wait for its election and try again`);
  const reply = await bus.nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${stream}`, undefined, {
    timeout: timeoutMs,
  });
  const answer = reply.json<StepDownAnswer>();
  if (!answer.success)
    throw new Error(
      `the leader of ${stream} did not step down: ${answer.error?.description ?? 'no reason given'}`,
    );
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const to = await leaderOf().catch(() => '');
    if (to && to !== from) return { stream, from, to };
    if (Date.now() > deadline)
      throw new Error(`${stream} elected no new leader within ${timeoutMs / 1000} s`);
    await sleep(100);
  }
}
