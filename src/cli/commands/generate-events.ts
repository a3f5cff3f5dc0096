import { once } from 'node:events';
import { open } from 'node:fs/promises';
import { Command, InvalidArgumentError } from 'commander';
import { generateEvents } from '../../demo/generator.js';
import { ValidationError } from '../../errors.js';

function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1)
    throw new InvalidArgumentError('must be a positive whole number');
  return parsed;
}

/** The `--out` file, or a clear refusal when it cannot be written (no such folder, no right). */
async function openOutput(path: string) {
  const file = await open(path, 'w').catch((error: Error) => {
    throw ValidationError.field('--out', `${path} cannot be written: ${error.message}`);
  });
  return file.createWriteStream();
}

interface GenerateFlags {
  events: number;
  visitors: number;
  seed: number;
  tenant: string;
  workspace: string[];
  start: string;
  out?: string;
}

export function generateEventsCommand(): Command {
  return new Command('generate-events')
    .description('write a deterministic store event sequence as NDJSON lines of {source, event}')
    .option('--events <n>', 'how many events', positiveInteger, 1000)
    .option('--visitors <n>', 'distinct visitors', positiveInteger, 200)
    .option('--seed <n>', 'the same seed gives the same events', positiveInteger, 1)
    .option('--tenant <tenant>', 'tenant id in the envelopes', 'demo')
    .option('-w, --workspace <workspace...>', 'workspace ids to spread visitors over', [
      'brand-eu',
      'brand-us',
    ])
    .option('--start <iso>', 'time of the first event', '2026-01-01T00:00:00.000Z')
    .option('--out <file>', 'write here instead of stdout')
    .addHelpText(
      'after',
      '\nExample:\n  cds generate-events --events 60 --seed 1 --out fixtures/sample-events.ndjson',
    )
    .action(async (options: GenerateFlags) => {
      const sink = options.out ? await openOutput(options.out) : process.stdout;
      for (const item of generateEvents({
        seed: options.seed,
        tenantId: options.tenant,
        workspaceIds: options.workspace,
        events: options.events,
        visitors: options.visitors,
        start: new Date(options.start),
      })) {
        if (!sink.write(`${JSON.stringify(item)}\n`)) await once(sink, 'drain');
      }
      if (options.out) {
        sink.end();
        await once(sink, 'finish');
      }
    });
}
