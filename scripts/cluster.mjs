// `npm run cluster`: a whole cds cluster on this machine, on loopback ports: three nats-server
// nodes (JetStream, a closed bus), two owners (shards a and b) and two collectors, with a demo
// tenant on each shard. It prints the entry points and runs until Ctrl-C. docs/scaling.md
// explains each process; this is the same layout on one machine.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startLocalCluster } from '../dist/bus/local-cluster.js';

const root = resolve(process.argv[2] ?? 'cds-cluster');
const MARKER = '.cds-cluster';
if (existsSync(root) && readdirSync(root).length > 0) {
  if (!existsSync(join(root, MARKER))) {
    console.error(`${root} is not empty and was not made by npm run cluster; pick another folder`);
    process.exit(2);
  }
  rmSync(root, { recursive: true, force: true });
}
mkdirSync(root, { recursive: true });
writeFileSync(join(root, MARKER), '');

const bin = resolve('bin/cds.js');
// Every owner shares the master key: a tenant's identifier keys derive from it, so its rows
// mean the same on whichever shard holds them, and the operator token is the same on each.
const masterKey = randomBytes(32).toString('hex');
const children = [];

/** Runs cds to the end: its stdout, or an error with its stderr. */
function cds(args, env = {}) {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [bin, ...args], {
      env: { ...process.env, CDS_MASTER_KEY: masterKey, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    child.on('exit', (code) => {
      if (code === 0) done(out.trim());
      else fail(new Error(`cds ${args.join(' ')} failed (${code}):\n${err}`));
    });
  });
}

/** The end of a daemon's log kept to explain its exit. */
const LOG_TAIL = 8192;

/**
 * Starts a daemon and resolves with the URL its log announces (an info record, so the log stays
 * at info; it goes to a pipe, not to this terminal, which shows only the entry points).
 */
function daemon(name, args) {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [bin, ...args], {
      env: { ...process.env, CDS_MASTER_KEY: masterKey },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(child);
    let err = '';
    const listening = /listening on (http:\/\/[^\s"]+)/;
    child.stderr.on('data', (chunk) => {
      err = (err + chunk).slice(-LOG_TAIL);
      const match = listening.exec(err);
      if (match) done(match[1]);
    });
    child.on('exit', (code) => fail(new Error(`${name} exited (${code}):\n${err}`)));
  });
}

// Installed first: Ctrl-C during the setup must still stop what was started, not leave it running.
const interrupted = new Promise((done) => {
  process.once('SIGINT', done);
  process.once('SIGTERM', done);
});

let nats;
async function stopAll() {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  await Promise.all(
    children.map((child) =>
      child.exitCode === null ? new Promise((r) => child.once('exit', r)) : null,
    ),
  );
  await nats?.stop();
}

try {
  nats = await startLocalCluster(join(root, 'nats'));
  const as = (role) => nats.flags(role);
  await cds(['bus', 'init', ...as('admin')]);
  const owners = {};
  for (const shard of ['a', 'b']) {
    owners[shard] = await daemon(`owner ${shard}`, [
      'serve',
      '-d',
      join(root, `owner-${shard}`),
      ...as('owner'),
      '--shard',
      shard,
      '--port',
      '0',
      '--quiet',
    ]);
  }
  const collectors = [];
  for (const index of [1, 2]) {
    collectors.push(
      await daemon(`collector ${index}`, [
        'collect',
        '-d',
        join(root, `collector-${index}`),
        ...as('collector'),
        '--port',
        '0',
      ]),
    );
  }
  const operator = await cds(['tokens', 'operator', '-d', join(root, 'owner-a')]);
  const tenants = [];
  for (const [tenant, shard] of [
    ['demo-a', 'a'],
    ['demo-b', 'b'],
  ]) {
    await cds(['shards', 'assign', tenant, shard, ...as('admin')]);
    // Created through owner a for both: demo-b's request is forwarded to shard b's owner.
    const created = JSON.parse(
      await cds([
        '--server',
        owners.a,
        '--token',
        operator,
        '--json',
        'tenants',
        'create',
        tenant,
        '-w',
        'web',
      ]),
    );
    const collector = JSON.parse(
      await cds([
        '--server',
        owners.a,
        '--token',
        created.tenant_token.token,
        '--json',
        'tokens',
        'issue',
        '--tenant',
        tenant,
        '--kind',
        'collector',
        '--name',
        'demo',
      ]),
    );
    // Registered through owner b: a write forwarded to the tenant's owner when it is on a.
    const registered = await fetch(`${owners.b}/v1/tenants/${tenant}/event-types/page_view`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${created.tenant_token.token}`,
        'content-type': 'application/json',
      },
      body: '{}',
    });
    if (!registered.ok)
      throw new Error(
        `registering page_view for ${tenant}: ${registered.status} ${await registered.text()}`,
      );
    tenants.push({
      tenant,
      shard,
      token: created.tenant_token.token,
      collector: collector.token,
    });
  }
  const lines = [
    '',
    `cds cluster in ${root}`,
    '',
    `  NATS (JetStream, 3 nodes)  ${nats.servers.join(',')}`,
    `  credentials                ${join(root, 'nats', '*.creds.json')} (collector, owner, admin)`,
    `  private CA (--bus-ca)      ${nats.tls.caFile}`,
    `  node configs               ${join(root, 'nats', 'n*.conf')}`,
    `  owner of shard a           ${owners.a}`,
    `  owner of shard b           ${owners.b}`,
    `  collectors                 ${collectors.join('  ')}`,
    `  operator token             ${operator}`,
    '',
    ...tenants.flatMap(({ tenant, shard, token, collector }) => [
      `  tenant ${tenant} on shard ${shard}`,
      `    tenant token     ${token}`,
      `    collector token  ${collector}`,
    ]),
    '',
    "Try (any owner answers for any tenant; any collector takes any tenant's events):",
    `  curl -s ${collectors[0]}/v1/events -H 'content-type: application/json' -H 'x-tenant-id: demo-b' -H 'x-workspace-id: web' -d '{"envelop_version":"1.0","id":"e1","name":"page_view","tenant_id":"demo-b","workspace_id":"web","anon_id":"cookie:v1","occured_at":"${new Date().toISOString()}","properties":{}}'`,
    `  curl -s ${owners.a}/v1/tenants/demo-b/workspaces -H 'authorization: Bearer ${tenants[1].token}'`,
    `  node bin/cds.js shards list ${nats.flags('admin').join(' ')}`,
    `  node bin/cds.js shards move demo-a b ${nats.flags('admin').join(' ')}`,
    '',
    'Press Ctrl-C to stop every process.',
  ];
  console.log(lines.join('\n'));
  await interrupted;
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
} finally {
  await stopAll();
}
