import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { DATABASE_FILE } from '../../src/store/data-dir.js';
import {
  openTestEnv,
  openTestEnvIn,
  type TestEnv,
  type TestEnvOptions,
  tempDir,
} from './context.js';
import { registerEventTypes } from './events.js';
import { seedTenants, type Tokens } from './tenant.js';

/** What a seeded data dir holds: its database, the key its tokens derive from, its registry. */
const SEEDED_FILES = [DATABASE_FILE, 'master.key', 'registry.json'];

interface SeededTemplate {
  dir: string;
  tokens: Tokens;
}

/** What a test file adds to every test's starting point (a catalog), through the API. */
export type SeedMore = (env: TestEnv, tokens: Tokens) => Promise<void>;

/** One template a test file, with and without the event types, and for each `SeedMore`. */
const templates = new Map<boolean, Map<SeedMore | null, Promise<SeededTemplate>>>();

/**
 * Seeds once per test file (migrations, tenants, tokens and event types take about half a second
 * of fsyncs on the 2-core machine; a file's own catalog often as much again) and closes it, so
 * each test copies closed files.
 */
function seededTemplate(eventTypes: boolean, more: SeedMore | null): Promise<SeededTemplate> {
  let byMore = templates.get(eventTypes);
  if (!byMore) {
    byMore = new Map();
    templates.set(eventTypes, byMore);
  }
  let template = byMore.get(more);
  if (!template) {
    template = (async () => {
      const env = await openTestEnv({ collector: true });
      const tokens = await seedTenants(env.context);
      if (eventTypes) await registerEventTypes(env, tokens.tenant);
      await more?.(env, tokens);
      await env.close({ keepDir: true });
      return { dir: env.dir, tokens };
    })();
    byMore.set(more, template);
  }
  return template;
}

/**
 * A data dir as `seedTenants` then `registerEventTypes` (unless `eventTypes: false`) and then
 * `more` leave it, with the app over it. Its master key is the template's: a test that sets
 * `master_key` seeds its own.
 */
export async function openSeededEnv(
  options: TestEnvOptions & { eventTypes?: boolean; more?: SeedMore } = {},
): Promise<{ env: TestEnv; tokens: Tokens }> {
  const { eventTypes = true, more = null, ...envOptions } = options;
  const { dir: from, tokens } = await seededTemplate(eventTypes, more);
  const dir = tempDir();
  for (const file of SEEDED_FILES) copyFileSync(join(from, file), join(dir, file));
  const env = await openTestEnvIn(dir, envOptions);
  return { env, tokens };
}
