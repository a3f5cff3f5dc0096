import { afterAll, beforeEach } from 'vitest';
import {
  holdLogRecords,
  showHeldLogOfFailedFile,
  showHeldLogOnFailure,
} from './helpers/held-log.js';
import { removeTempDirs } from './helpers/temp-dirs.js';

// A suite run makes hundreds of data dirs, each with a database of megabytes.
afterAll(removeTempDirs);

// The log of code under test in this process is shown with the test that fails, not among
// vitest's lines (helpers/held-log.ts).
holdLogRecords();
beforeEach(showHeldLogOnFailure);
// biome-ignore lint/correctness/noEmptyPattern: vitest takes the file from the second parameter only when the first is a pattern.
afterAll(({}, file) => showHeldLogOfFailedFile(file));
