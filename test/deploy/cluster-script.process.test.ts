import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp-dirs.js';
import { waitUntil } from '../helpers/wait.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
let script: ChildProcess | null = null;

afterAll(() => {
  if (script && script.exitCode === null) script.kill('SIGKILL');
});

/** Every process below `pid` now, from /proc (Linux). */
function descendants(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // The parent pid is the second field after the command's ")".
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // It exited while the list was read.
    }
  }
  const found: number[] = [];
  const below = (parent: number) => {
    for (const [child, itsParent] of parents) {
      if (itsParent === parent) {
        found.push(child);
        below(child);
      }
    }
  };
  below(pid);
  return found;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The value printed after `label` on a line of the script's banner. */
function printed(banner: string, label: RegExp): string {
  const match = label.exec(banner);
  if (!match?.[1]) throw new Error(`the banner has no ${label}:\n${banner}`);
  return match[1];
}

describe('npm run cluster (scripts/cluster.mjs)', () => {
  it('starts a whole cluster, stores an event of each demo tenant, and stops every process on Ctrl-C', async () => {
    const child = spawn(process.execPath, ['scripts/cluster.mjs', join(tempDir(), 'cluster')], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    script = child;
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    await waitUntil(
      () => {
        if (child.exitCode !== null) throw new Error(`cluster.mjs exited early:\n${stderr}`);
        return stdout.includes('Press Ctrl-C');
      },
      'the entry points',
      120_000,
    );
    const ownerA = printed(stdout, /owner of shard a\s+(\S+)/);
    const ownerB = printed(stdout, /owner of shard b\s+(\S+)/);
    const collectors = printed(stdout, /collectors\s+(.+)/)
      .trim()
      .split(/\s+/);
    expect(collectors).toHaveLength(2);
    const tenants = [
      { tenant: 'demo-a', token: printed(stdout, /demo-a on shard a\n\s+tenant token\s+(\S+)/) },
      { tenant: 'demo-b', token: printed(stdout, /demo-b on shard b\n\s+tenant token\s+(\S+)/) },
    ];

    for (const [index, { tenant }] of tenants.entries()) {
      const sent = await fetch(`${collectors[index]}/v1/events`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-tenant-id': tenant,
          'x-workspace-id': 'web',
        },
        body: JSON.stringify({
          envelop_version: '1.0',
          id: `script-${tenant}`,
          name: 'page_view',
          tenant_id: tenant,
          workspace_id: 'web',
          anon_id: `cookie:${tenant}`,
          occured_at: new Date().toISOString(),
          properties: {},
        }),
      });
      expect(sent.status, `${tenant}: ${await sent.text()}`).toBe(202);
    }
    // Each tenant's profile is read through both owners: one of them forwards it.
    for (const { tenant, token } of tenants) {
      for (const owner of [ownerA, ownerB]) {
        await waitUntil(
          async () => {
            const response = await fetch(
              `${owner}/v1/tenants/${tenant}/workspaces/web/profiles/summary`,
              { headers: { authorization: `Bearer ${token}` } },
            );
            if (!response.ok) return false;
            const { profiles } = (await response.json()) as { profiles: unknown[] };
            return profiles.length === 1;
          },
          `${tenant}'s event stored, read through ${owner}`,
          30_000,
        );
      }
    }

    const processes = descendants(child.pid as number);
    // Three nats-server nodes, two owners, two collectors.
    expect(processes.length).toBeGreaterThanOrEqual(7);
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    await waitUntil(() => processes.every((pid) => !alive(pid)), 'every child process gone');
  }, 240_000);
});
