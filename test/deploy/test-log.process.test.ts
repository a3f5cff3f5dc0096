import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp-dirs.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** A vitest of its own over test/helpers/held-log.fixture.ts, with the suite's setup file. */
function runFixture(env: NodeJS.ProcessEnv): Promise<{ code: number; output: string }> {
  const config = join(tempDir(), 'vitest.config.mjs');
  writeFileSync(
    config,
    `export default ${JSON.stringify({
      test: {
        root,
        include: ['test/helpers/held-log.fixture.ts'],
        setupFiles: ['test/setup.ts'],
        pool: 'forks',
      },
    })};\n`,
  );
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--config', config],
      { cwd: root, env: { ...process.env, ...env, NO_COLOR: '1' } },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, output: stdout + stderr });
      },
    );
  });
}

describe('the log of code under test', () => {
  it('is shown with a test that fails, under its name, and not for one that passes', async () => {
    const { code, output } = await runFixture({});
    expect(code).toBe(1);
    expect(output).toContain('The log of "fails":');
    expect(output.match(/"msg":"record of a failing test"/g)).toHaveLength(1);
    expect(output).not.toContain('"msg":"record of a passing test"');
  });

  it('comes as it is written with CDS_TEST_LOG=live', async () => {
    const { code, output } = await runFixture({ CDS_TEST_LOG: 'live' });
    expect(code).toBe(1);
    expect(output).toContain('"msg":"record of a passing test"');
    expect(output).toContain('"msg":"record of a failing test"');
    expect(output).not.toContain('The log of');
  });
});
