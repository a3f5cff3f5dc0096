import { statSync } from 'node:fs';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import type { Context } from '../src/context.js';
import { KeyRing } from '../src/identity/tenant-keys.js';
import { eraseProfile } from '../src/privacy/erase.js';
import { openDataDir } from '../src/store/data-dir.js';
import { Store } from '../src/store/database.js';
import { prepareDataDir, TENANT, WORKSPACES } from './setup.js';

const WORKSPACE = WORKSPACES[0];

/**
 * `events` stored events over one profile per ten events, written straight into the tables
 * ingest fills (ingesting five million events first would time ingest, not erasure).
 */
async function seed(context: Context, events: number): Promise<void> {
  const profiles = Math.max(1, Math.floor(events / 10));
  const params = { tenant: TENANT, workspace: WORKSPACE, profiles, events };
  await context.store.write(async (session) => {
    await session.runText(
      `INSERT INTO profiles
       SELECT $tenant, $workspace, 'p_' || lpad(to_hex(i), 24, '0'), TIMESTAMP '2026-01-01', TIMESTAMP '2026-03-01', NULL
       FROM range($profiles) t(i)`,
      { tenant: TENANT, workspace: WORKSPACE, profiles },
    );
    await session.runText(
      `INSERT INTO profile_identifiers
       SELECT $tenant, $workspace, md5('key' || i), 'email', 'p_' || lpad(to_hex(i), 24, '0'),
         unhex(md5('c' || i) || md5('d' || i))::BLOB, 'c***@s***.test', TIMESTAMP '2026-01-01'
       FROM range($profiles) t(i)`,
      { tenant: TENANT, workspace: WORKSPACE, profiles },
    );
    await session.runText(
      `INSERT INTO events
       SELECT $tenant, $workspace, gen_random_uuid()::VARCHAR, 'order_completed', 'id:' || i,
         'p_' || lpad(to_hex(i % $profiles), 24, '0'), 'server',
         TIMESTAMP '2026-01-01' + INTERVAL (i % 5000000) SECOND, TIMESTAMP '2026-03-01',
         json_object('order_id', 'o' || i, 'total', i % 500, 'category', 'shoes'),
         [md5('key' || (i % $profiles))], TIMESTAMP '2026-03-01',
         md5_number($tenant || '/' || $workspace || '/order_completed/id:' || i)
       FROM range($events) t(i)`,
      params,
    );
    await session.runText(
      `INSERT INTO profile_metrics
       SELECT $tenant, $workspace, 'p_' || lpad(to_hex(i), 24, '0'), 'orders', 10, NULL, NULL, TIMESTAMP '2026-03-01'
       FROM range($profiles) t(i)`,
      { tenant: TENANT, workspace: WORKSPACE, profiles },
    );
  });
  await context.store.checkpoint();
}

export async function benchErase(events: number): Promise<void> {
  console.log(`\nerasure: one profile out of ${events.toLocaleString('en')} stored events`);
  const { dir } = await prepareDataDir();
  const config = loadConfig({ data_dir: dir }, {});
  const dataDir = openDataDir(config.data_dir);
  const context: Context = {
    store: await Store.open(dataDir.databasePath),
    config,
    dataDir,
    clock: systemClock,
    keyRing: new KeyRing(dataDir.masterKey),
  };
  const seeding = performance.now();
  await seed(context, events);
  const size = statSync(dataDir.databasePath).size / 2 ** 20;
  console.log(
    `  seeded in ${((performance.now() - seeding) / 1000).toFixed(1)} s; database file ${size.toFixed(0)} MiB`,
  );
  const started = performance.now();
  const result = await eraseProfile(context, {
    tenantId: TENANT,
    workspaceId: WORKSPACE,
    profileId: `p_${(4242).toString(16).padStart(24, '0')}`,
    actor: 'operator',
    dryRun: false,
  });
  const answered = (performance.now() - started) / 1000;
  await context.store.checkpoint();
  const rewritten = (performance.now() - started) / 1000;
  console.log(
    `  erase one profile (${result.erased.events} events), committed and answered: ${answered.toFixed(2)} s   target ≤ 2 s`,
  );
  console.log(
    `    database file rewritten so no erased byte remains, ${rewritten.toFixed(2)} s after the request`,
  );
  await context.store.close();
}
