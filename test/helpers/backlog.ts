import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEMO_TENANT, DEMO_WORKSPACES, setUpDemo } from '../../src/cli/demo-setup.js';
import { openContext } from '../../src/cli/open-context.js';
import { generateEvents } from '../../src/demo/generator.js';
import { tempDir } from './temp-dirs.js';

/** A data dir with the demo tenant, its event types, metrics and segments. */
export async function demoDataDir(): Promise<string> {
  const dir = tempDir();
  const context = await openContext({ data_dir: dir }, 'create');
  await setUpDemo(context);
  await context.store.close();
  return dir;
}

/**
 * Generated demo events as sealed landing files, one a workspace, the way a collector leaves
 * them: written as `.open`, then renamed. Says where they are.
 */
export function writeBacklog(
  dir: string,
  options: { events: number; name: string; seed?: number },
): string[] {
  const lines = new Map<string, string[]>();
  for (const { source, event } of generateEvents({
    seed: options.seed ?? 5,
    tenantId: DEMO_TENANT,
    workspaceIds: DEMO_WORKSPACES,
    events: options.events,
    visitors: Math.max(10, options.events / 10),
    start: new Date('2026-03-01T00:00:00Z'),
  })) {
    const line = JSON.stringify({
      received_at: '2026-03-01T12:00:00.000Z',
      source,
      collector_id: 'ctest',
      event,
    });
    const workspaceLines = lines.get(event.workspace_id);
    if (workspaceLines) workspaceLines.push(line);
    else lines.set(event.workspace_id, [line]);
  }
  return [...lines].map(([workspace, workspaceLines]) => {
    const partition = join(
      dir,
      'landing',
      `tenant=${DEMO_TENANT}`,
      `workspace=${workspace}`,
      'date=2026-03-01',
      'hour=12',
    );
    mkdirSync(partition, { recursive: true });
    const path = join(partition, `${options.name}.ndjson`);
    writeFileSync(`${path}.open`, `${workspaceLines.join('\n')}\n`);
    renameSync(`${path}.open`, path);
    return path;
  });
}
