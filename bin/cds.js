#!/usr/bin/env node
import { runCLI } from '../dist/cli/main.js';

await runCLI(process.argv);
