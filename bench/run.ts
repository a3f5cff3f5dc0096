import { benchCollector } from './collector.js';
import { benchIngest } from './ingest.js';

/** `npm run bench [-- ingest|collector] [--events N]`: prints figures and ratios, asserts nothing. */
const args = process.argv.slice(2);
const eventsFlag = args.indexOf('--events');
const events = eventsFlag >= 0 ? Number(args[eventsFlag + 1]) : 1_000_000;
const only = args.find((arg) => !arg.startsWith('--') && arg !== String(events));

if (!only || only === 'ingest') await benchIngest(events);
if (!only || only === 'collector') await benchCollector();
