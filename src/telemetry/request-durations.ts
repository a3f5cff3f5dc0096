/** Seconds; the same upper bounds as the process's other duration histograms. */
export const DURATION_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
] as const;

interface Series {
  method: string;
  route: string;
  status: number;
  /** Observations per bucket, not cumulative; the last slot counts those above every bound. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/** Prometheus' escaping of a label value in the text format. */
function labelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/**
 * The histogram of HTTP request durations by method, route template and status, recorded with
 * no allocation once a series exists: a request is counted on every response, and prom-client's
 * `observe` (a label object, its hash and a lookup per call) cost the single-event collector
 * endpoint a measurable share of its rate. Written in Prometheus' text format at scrape time,
 * series for series what a prom-client histogram of the same name writes.
 */
export class RequestDurations {
  /** route → method → status: three lookups of values Fastify already holds, no key to build. */
  private readonly byRoute = new Map<string, Map<string, Map<number, Series>>>();

  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  record(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.byRoute.get(route);
    if (!byMethod) {
      byMethod = new Map();
      this.byRoute.set(route, byMethod);
    }
    let byStatus = byMethod.get(method);
    if (!byStatus) {
      byStatus = new Map();
      byMethod.set(method, byStatus);
    }
    let series = byStatus.get(status);
    if (!series) {
      series = {
        method,
        route,
        status,
        counts: new Float64Array(DURATION_BUCKETS.length + 1),
        sum: 0,
        count: 0,
      };
      byStatus.set(status, series);
    }
    let bucket = 0;
    while (bucket < DURATION_BUCKETS.length && seconds > (DURATION_BUCKETS[bucket] as number)) {
      bucket += 1;
    }
    series.counts[bucket] = (series.counts[bucket] as number) + 1;
    series.sum += seconds;
    series.count += 1;
  }

  /** The histogram in Prometheus' text format (0.0.4), HELP and TYPE lines first. */
  text(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const byMethod of this.byRoute.values()) {
      for (const byStatus of byMethod.values()) {
        for (const series of byStatus.values()) lines.push(...this.seriesLines(series));
      }
    }
    return lines.join('\n');
  }

  private seriesLines(series: Series): string[] {
    const labels = `method="${labelValue(series.method)}",route="${labelValue(series.route)}",status="${series.status}"`;
    const lines: string[] = [];
    let cumulative = 0;
    DURATION_BUCKETS.forEach((bound, index) => {
      cumulative += series.counts[index] as number;
      lines.push(`${this.name}_bucket{le="${bound}",${labels}} ${cumulative}`);
    });
    lines.push(
      `${this.name}_bucket{le="+Inf",${labels}} ${series.count}`,
      `${this.name}_sum{${labels}} ${series.sum}`,
      `${this.name}_count{${labels}} ${series.count}`,
    );
    return lines;
  }
}
