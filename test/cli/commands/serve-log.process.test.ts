import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { CDS_BIN } from '../../helpers/cli.js';
import { tempDir } from '../../helpers/temp-dirs.js';
import { waitUntil } from '../../helpers/wait.js';

/** A port nothing listens on: bound, then closed again (at warn, cds does not say its port). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

/** pino's numbers for the levels set by `CDS_LOG_LEVEL` here. */
const LEVEL_NUMBERS = { info: 30, warn: 40 } as const;

/** What `cds serve` wrote to stdout and stderr, both pipes, over a start, requests and a stop. */
async function serveOnce(level: keyof typeof LEVEL_NUMBERS) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    process.execPath,
    [CDS_BIN, '--data-dir', tempDir(), 'serve', '--port', String(port), '--host', '127.0.0.1'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CDS_LOG_LEVEL: level },
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = once(child, 'exit');
  await waitUntil(
    () =>
      fetch(`${url}/healthz`).then(
        (response) => response.ok,
        () => false,
      ),
    'cds serve to answer /healthz',
    20_000,
  );
  // Logged requests, one of them refused.
  expect((await fetch(`${url}/v1/whoami`)).status).toBe(401);
  child.kill('SIGTERM');
  const [code] = (await exited) as [number | null];
  expect(code).toBe(0);
  return { stdout, stderr, url };
}

function linesOf(text: string): string[] {
  return text.split('\n').filter((line) => line.length > 0);
}

describe('cds serve off a terminal', () => {
  it.each(['info', 'warn'] as const)(
    'writes only JSON log lines at CDS_LOG_LEVEL=%s or above, on stdout and stderr',
    async (level) => {
      const { stdout, stderr, url } = await serveOnce(level);
      const lines = [...linesOf(stdout), ...linesOf(stderr)];
      const records = lines.map((line) => {
        expect(() => JSON.parse(line), line).not.toThrow();
        return JSON.parse(line) as { level: unknown; msg?: string; url?: string };
      });
      for (const record of records) {
        expect(record.level).toEqual(expect.any(Number));
        expect(record.level as number).toBeGreaterThanOrEqual(LEVEL_NUMBERS[level]);
      }
      const listening = records.filter((record) => record.msg?.startsWith('cds listening on'));
      if (level === 'info') {
        expect(listening).toEqual([
          expect.objectContaining({ level: 30, url, msg: expect.stringContaining(`on ${url} `) }),
        ]);
        expect(records.length).toBeGreaterThan(1);
      } else {
        expect(listening).toEqual([]);
      }
    },
  );
});
