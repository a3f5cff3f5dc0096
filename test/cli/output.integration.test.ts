import { beforeAll, describe, expect, it } from 'vitest';
import { cdsInProcess } from '../helpers/cli-in-process.js';
import { tempDir } from '../helpers/temp-dirs.js';

/** A name a tenant could give a token: clears the screen, reverses the text, and more. */
const HOSTILE_NAME = 'evil\x1b[2J\u202egnp.exe\u2066\x7f\u009b\x07\nsecond line';
const SHOWN_NAME = 'evil\\x1b[2J\\u202egnp.exe\\u2066\\x7f\\x9b\\x07\\x0asecond line';

/** Anything a terminal would act on, besides the line ends the CLI writes itself. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('what the CLI prints', () => {
  let dir: string;
  const cds = (...args: string[]) => cdsInProcess(['--data-dir', dir, ...args]);

  beforeAll(async () => {
    dir = tempDir();
    expect((await cds('tenants', 'create', 'acme', '-w', 'eu')).code).toBe(0);
    const issued = await cds(
      'tokens',
      'issue',
      '--tenant',
      'acme',
      '--kind',
      'workspace',
      '-w',
      'eu',
      '--name',
      HOSTILE_NAME,
    );
    expect(issued.code, issued.stderr).toBe(0);
  }, 30_000);

  it('shows the controls in a token name as escapes in a table', async () => {
    const listed = await cds('tokens', 'list', '--tenant', 'acme');
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toMatch(RAW_CONTROL);
    expect(listed.stdout).toContain(SHOWN_NAME);
    // One line a token, below the header: the newline in the name did not start a row.
    expect(listed.stdout.trimEnd().split('\n')).toHaveLength(3);
  });

  it('writes them as \\u escapes in --json, which parse back to the name', async () => {
    const listed = await cds('--json', 'tokens', 'list', '--tenant', 'acme');
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toMatch(RAW_CONTROL);
    const names = JSON.parse(listed.stdout).tokens.map((token: { name: string }) => token.name);
    expect(names).toContain(HOSTILE_NAME);
  });

  it.each([
    [
      'an error that quotes a --server URL',
      ['--server', 'http://127.0.0.1:9/\x1b]0;owned\x07', 'tokens', 'list', '--tenant', 'acme'],
      'http://127.0.0.1:9/\\x1b]0;owned\\x07',
    ],
    [
      "commander's error for an unknown option",
      ['tokens', 'list', '--tenant', 'acme', '--x\u202eyz'],
      "'--x\\u202eyz'",
    ],
  ])('escapes %s', async (_what, args, shown) => {
    const result = await cds(...args);
    expect(result.code).not.toBe(0);
    expect(result.stderr).not.toMatch(RAW_CONTROL);
    expect(result.stderr).toContain(shown);
  });
});
