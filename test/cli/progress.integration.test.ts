import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { demoDataDir, writeBacklog } from '../helpers/backlog.js';
import { cdsInProcess } from '../helpers/cli-in-process.js';

const EVENTS = 3_000;

/** A demo data dir with a backlog of sealed landing files, one a workspace, as collectors leave. */
async function dataDirWithBacklog(): Promise<string> {
  const dir = await demoDataDir();
  writeBacklog(dir, { events: EVENTS, name: 'ctest-00000001', seed: 11 });
  return dir;
}

describe('progress of long commands', () => {
  it('cds ingest on a backlog prints plain progress lines to stderr when it is not a terminal, and keeps stdout for the answer', async () => {
    const dir = await dataDirWithBacklog();
    // Small batches, so the backlog takes several and the progress moves in steps.
    const result = await cdsInProcess(['--data-dir', dir, 'ingest'], {
      CDS_MAX_BATCH_EVENTS: '500',
    });
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stderr.trimEnd().split('\n');
    const progress = lines.filter((line) => /^ingest \d+% /.test(line));
    expect(progress.length).toBeGreaterThanOrEqual(3);
    const percents = progress.map((line) => Number(/^ingest (\d+)%/.exec(line)?.[1]));
    expect(percents).toEqual([...percents].sort((a, b) => a - b));
    expect(percents.at(-1)).toBe(100);
    // Percent of the backlog's bytes, events so far, their rate, and the time left at that rate.
    expect(
      progress.some((line) =>
        /^ingest \d+% \([\d.]+ [KM]iB of [\d.]+ [KM]iB\), [\d,]+ events, [\d,]+ events\/s, about \d+(m \d\ds|s) left$/.test(
          line,
        ),
      ),
      result.stderr,
    ).toBe(true);
    expect(lines.at(-1)).toMatch(/^ingest done in \d+(m \d\ds|s): \d+ files, [\d,]+ events \(/);
    // No terminal control reaches a log.
    expect(result.stderr).not.toContain('\u001b');
    expect(result.stdout).toMatch(/^Ingested \d+ files, [\d,]+ events/);
    expect(result.stdout).not.toContain('%');
  }, 60_000);

  it('cds snapshot says when it is done, on stderr, while stdout names the file', async () => {
    const dir = await dataDirWithBacklog();
    const out = join(dir, 'analysts.duckdb');
    const result = await cdsInProcess(['--data-dir', dir, 'snapshot', out]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/^snapshot done in \d+s: profiles \d+, /m);
    expect(result.stdout).toMatch(new RegExp(`^Wrote ${out}: profiles \\d+`));
    expect(statSync(out).size).toBeGreaterThan(0);
  }, 60_000);

  it('cds export says when it is done, on stderr, while stdout names the folder', async () => {
    const dir = await dataDirWithBacklog();
    const out = join(dir, 'export');
    const result = await cdsInProcess(['--data-dir', dir, 'export', out]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/^export done in \d+s: /m);
    expect(result.stdout).toMatch(new RegExp(`^Wrote ${out} \\(parquet\\): `));
  }, 60_000);
});
