import { expect, it } from 'vitest';
import { componentLog } from '../../src/telemetry/log.js';

// Run by test/deploy/test-log.process.test.ts in a vitest of its own; its include never names it.
it('passes', () => {
  componentLog('check').info('record of a passing test');
});

it('fails', () => {
  componentLog('check').warn('record of a failing test');
  expect('failed').toBe('passed');
});
