import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChildServer, runCli, startCli } from '../../helpers/cli.js';
import { tempDir } from '../../helpers/temp-dirs.js';

describe('cds tokens operator', () => {
  let dir: string;
  let server: ChildServer;
  beforeAll(async () => {
    dir = tempDir();
    server = await startCli(
      ['--data-dir', dir, 'serve', '--port', '0', '--quiet'],
      /cds listening on (http:\/\/\S+)/,
    );
  });
  afterAll(async () => {
    expect(await server.stop()).toBe(0);
  });

  it('prints the token /metrics takes on stdout alone, and warns on stderr that it is a secret', async () => {
    const printed = await runCli(['--data-dir', dir, 'tokens', 'operator']);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toMatch(/^cpo_[A-Za-z0-9_-]+\n$/);
    expect(printed.stderr).toContain('this is a secret');
    expect(printed.stderr).toContain(`derived from ${dir}/master.key`);
    const token = printed.stdout.trim();

    const scrape = await fetch(`${server.url}/metrics`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(scrape.status).toBe(200);
    expect(await scrape.text()).toMatch(/^cds_landing_backlog_files \d+$/m);
    const anonymous = await fetch(`${server.url}/metrics`);
    expect(anonymous.status).toBe(401);
  });

  it('says where the key came from with --json', async () => {
    const printed = await runCli(['--data-dir', dir, 'tokens', 'operator', '--json']);
    expect(printed.code).toBe(0);
    const answer = JSON.parse(printed.stdout) as Record<string, string>;
    expect(answer).toEqual({
      kind: 'operator',
      token: expect.stringMatching(/^cpo_/),
      derived_from: `${dir}/master.key`,
    });
  });

  it('refuses a data dir without a master key instead of making one, and exits 1', async () => {
    const empty = `${tempDir()}/never-served`;
    const refused = await runCli(['--data-dir', empty, 'tokens', 'operator']);
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toContain(`${empty}/master.key does not exist`);
  });
});
