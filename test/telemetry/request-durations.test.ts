import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { DURATION_BUCKETS, RequestDurations } from '../../src/telemetry/request-durations.js';

const NAME = 'cds_http_request_duration_seconds';
const HELP = 'HTTP requests by method, route template and status';

/** Requests of several series, with durations on, between and past the bucket bounds. */
const REQUESTS: [method: string, route: string, status: number, seconds: number][] = [
  ['POST', '/v1/events', 202, 0.0004],
  ['POST', '/v1/events', 202, 0.005],
  ['POST', '/v1/events', 202, 0.0051],
  ['POST', '/v1/events', 422, 0.02],
  ['GET', '/v1/tenants/:tenant/profiles/:profile', 200, 1.5],
  ['GET', '/v1/tenants/:tenant/profiles/:profile', 200, 75],
  ['GET', 'unmatched', 404, 0.3],
  ['POST', '/v1/a "quoted" \\ route\nof two lines', 500, 60],
];

describe('request durations recorded without prom-client on the request path', () => {
  it('are written as the prom-client histogram of the same observations writes them', async () => {
    const durations = new RequestDurations(NAME, HELP);
    const registry = new Registry();
    const histogram = new Histogram({
      name: NAME,
      help: HELP,
      labelNames: ['method', 'route', 'status'] as const,
      buckets: [...DURATION_BUCKETS],
      registers: [registry],
    });
    for (const [method, route, status, seconds] of REQUESTS) {
      durations.record(method, route, status, seconds);
      histogram.observe({ method, route, status: String(status) }, seconds);
    }
    expect(durations.text()).toBe(await registry.getSingleMetricAsString(NAME));
  });

  it('write only the HELP and TYPE lines before the first request', async () => {
    const registry = new Registry();
    new Histogram({
      name: NAME,
      help: HELP,
      labelNames: ['method', 'route', 'status'] as const,
      buckets: [...DURATION_BUCKETS],
      registers: [registry],
    });
    expect(new RequestDurations(NAME, HELP).text()).toBe(
      await registry.getSingleMetricAsString(NAME),
    );
  });
});
