/** With CDS_TRACE set, each traced step's time goes to stderr: how ingest's cost is measured (docs/benchmarks.md). */
const TRACE = Boolean(process.env.CDS_TRACE);

export async function traced<T>(step: string, work: () => Promise<T>): Promise<T> {
  if (!TRACE) return work();
  const started = performance.now();
  try {
    return await work();
  } finally {
    process.stderr.write(`trace ${step} ${(performance.now() - started).toFixed(0)} ms\n`);
  }
}
