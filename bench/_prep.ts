import { join } from 'node:path';
import { writeLandingFiles } from './ingest.js';
import { prepareDataDir } from './setup.js';

const events = Number(process.argv[2] ?? 1_000_000);
const { dir } = await prepareDataDir();
writeLandingFiles(join(dir, 'landing'), events);
console.log(dir);
