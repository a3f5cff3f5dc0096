import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { writeLandingFiles } from './ingest.js';
import { makeBenchDir, prepareDataDir, rate, type Timed, timeCds } from './setup.js';

/** The landing files joined into one history file, in the order ingest reads them. */
async function historyFile(paths: string[]): Promise<string> {
  const path = join(makeBenchDir('cds-bench-history-'), 'history.ndjson');
  const out = createWriteStream(path);
  for (const file of paths) {
    for await (const chunk of createReadStream(file)) {
      if (!out.write(chunk)) await once(out, 'drain');
    }
  }
  out.end();
  await finished(out);
  return path;
}

function describe(run: Timed, handled: number, detail: string): string {
  return `${run.seconds.toFixed(2)} s, ${rate(handled, run.seconds)}, ${run.cpuSeconds.toFixed(1)} s CPU, peak RSS ${run.maxRssMiB.toFixed(0)} MiB (${detail})`;
}

/**
 * `cds import` of a history file beside `cds ingest` of the same events as landing files, in the
 * same run, each into a fresh store: what the import's reading, checking and chunking costs on
 * top of the landing engine both share.
 */
export async function benchImport(events: number): Promise<void> {
  console.log(`\n## import: ${events.toLocaleString('en')} events`);
  const ingested = await prepareDataDir();
  const written = writeLandingFiles(join(ingested.dir, 'landing'), events);
  const input = await historyFile(written.files.map((file) => file.path));
  console.log(
    `history: ${(written.bytes / 1024 / 1024).toFixed(0)} MiB, the same lines as ${written.files.length} landing files`,
  );
  const imported = await prepareDataDir();

  const ingest = await timeCds(['--data-dir', ingested.dir, '--json', 'ingest']);
  const totals = JSON.parse(ingest.stdout) as {
    events: number;
    duplicates: number;
    rejected: number;
  };
  const ingestHandled = totals.events + totals.duplicates + totals.rejected;
  console.log(
    `cds ingest (landing files): ${describe(ingest, ingestHandled, `${totals.events.toLocaleString('en')} stored`)}`,
  );

  const run = await timeCds(['--data-dir', imported.dir, '--json', 'import', input]);
  const summary = JSON.parse(run.stdout) as { lines: number; stored: number };
  console.log(
    `cds import (one history file): ${describe(run, summary.lines, `${summary.stored.toLocaleString('en')} stored`)}`,
  );
  if (summary.stored !== totals.events) {
    console.log(`!! import stored ${summary.stored}, ingest ${totals.events}`);
  }
  console.log(
    `ratio import / ingest events/s: ${(summary.lines / run.seconds / (ingestHandled / ingest.seconds)).toFixed(2)}`,
  );
}
