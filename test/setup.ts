import { afterAll } from 'vitest';
import { removeTempDirs } from './helpers/temp-dirs.js';

// A suite run makes hundreds of data dirs, each with a database of megabytes.
afterAll(removeTempDirs);
