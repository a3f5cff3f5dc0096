import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { type GeneratorRun, writeLandingFiles } from './ingest.js';
import { CDS_BIN, stopChild } from './setup.js';

/** One small batch as a running `cds ingest --watch` took it: its CPU and its traced batch. */
export interface LiveBatch {
  cpuSeconds: number;
  batchMs: number;
}

/** User plus system CPU a process has used so far (/proc/<pid>/stat, in clock ticks of 10 ms). */
function cpuSecondsOf(pid: number): number {
  const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] as string).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * Small batches as live traffic brings them to a store (issue 37: "the figure live traffic
 * sees"): one `cds ingest --watch` over the data dir, traced, given `count` batches of `events`
 * one after the other, each after the last was committed. The first batch warms the process up
 * (it opens the store and builds what it keeps between batches) and is not counted.
 */
export async function liveBatches(
  dir: string,
  count: number,
  events: number,
  runOf: (batch: number) => GeneratorRun,
): Promise<LiveBatch[]> {
  const child = spawn(process.execPath, [CDS_BIN, '--data-dir', dir, 'ingest', '--watch'], {
    env: { ...process.env, CDS_TRACE: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const traced = () =>
    [...stderr.matchAll(/^trace ingest batch (\d+) ms$/gm)].map((m) => Number(m[1]));
  const batches: LiveBatch[] = [];
  try {
    for (let batch = 0; batch <= count; batch += 1) {
      const before = traced().length;
      const cpuBefore = cpuSecondsOf(child.pid as number);
      writeLandingFiles(`${dir}/landing`, events, runOf(batch));
      while (traced().length === before) {
        if (child.exitCode !== null) throw new Error(`cds ingest --watch exited: ${stderr}`);
        await sleep(20);
      }
      // The checkpoint and upkeep after the commit belong to the batch too.
      await sleep(500);
      if (batch > 0)
        batches.push({
          cpuSeconds: cpuSecondsOf(child.pid as number) - cpuBefore,
          batchMs: traced().at(-1) as number,
        });
    }
  } finally {
    await stopChild(child);
  }
  return batches;
}
