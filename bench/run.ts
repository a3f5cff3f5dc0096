import { benchCli } from './cli.js';
import { benchCluster } from './cluster.js';
import { benchCollector } from './collector.js';
import { benchConsole } from './console.js';
import { benchErase } from './erase.js';
import { benchGrowth } from './growth.js';
import { benchImport } from './import.js';
import { benchIngest } from './ingest.js';
import { benchSegments } from './segments.js';
import { removeBenchDirs } from './setup.js';

/**
 * `npm run bench [-- ingest|collector|segments|erase|cli|cluster|console|growth|import] [--events N] [--profiles N]
 * [--rounds N]`: prints figures and ratios, asserts nothing.
 */
const args = process.argv.slice(2);
const eventsFlag = args.indexOf('--events');
const events = eventsFlag >= 0 ? Number(args[eventsFlag + 1]) : 1_000_000;
// The console's behaviour previews are measured over ten million stored events unless told.
const consoleEvents = eventsFlag >= 0 ? events : 10_000_000;
const profilesFlag = args.indexOf('--profiles');
const profiles = profilesFlag >= 0 ? Number(args[profilesFlag + 1]) : 1_000_000;
const roundsFlag = args.indexOf('--rounds');
const rounds = roundsFlag >= 0 ? Number(args[roundsFlag + 1]) : 10;
const only = args.find((arg) =>
  [
    'ingest',
    'collector',
    'segments',
    'erase',
    'cli',
    'cluster',
    'console',
    'growth',
    'import',
  ].includes(arg),
);

try {
  if (!only || only === 'ingest') await benchIngest(events);
  if (!only || only === 'collector') await benchCollector();
  if (!only || only === 'segments') await benchSegments(profiles);
  if (!only || only === 'erase')
    await benchErase(Number(process.env.BENCH_ERASE_EVENTS ?? 1_000_000));
  if (!only || only === 'cli') await benchCli();
  if (!only || only === 'console') await benchConsole(profiles, consoleEvents);
  // Needs nats-server (scripts/system-packages.sh), so only when asked for by name.
  if (only === 'cluster') await benchCluster();
  // Ten million events by default, a quarter of an hour or more: only when asked for by name.
  if (only === 'growth') await benchGrowth(rounds, events);
  // The ingest bench's events twice over (landing files, then one history file): by name only.
  if (only === 'import') await benchImport(events);
} finally {
  removeBenchDirs();
}
