import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect as tlsConnect } from 'node:tls';
import { compare } from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BusConnection, type BusSettings, connectBus } from '../../src/bus/connect.js';
import { freePort, type RunningNodes, runNodes } from '../../src/bus/local-cluster.js';
import { makePrivateCa, type PrivateCa } from '../../src/bus/private-ca.js';
import type { NodeConfig } from '../../src/bus/server-config.js';
import { EVENTS_STREAM } from '../../src/bus/subjects.js';
import { SHARED_MASTER_KEY, seedShardDir, shardRows, waitDrained } from '../helpers/bus-owners.js';
import { CDS_BIN, type ChildServer, type CliResult, runCli, startCli } from '../helpers/cli.js';
import { cdsInProcess } from '../helpers/cli-in-process.js';
import { tempDir } from '../helpers/temp-dirs.js';

/** `cds …` as a child process with `input` on its stdin. */
function cdsWithInput(args: string[], input: string): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CDS_BIN, ...args], (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
    child.stdin?.end(input);
  });
}

/**
 * Connects to a node as the NATS protocol does (its INFO in the clear, then TLS) trusting the CA
 * but presenting no certificate, sends CONNECT and PING, and tells whether PONG came back and
 * what ended the connection.
 */
async function speakWithoutCertificate(
  url: string,
  caFile: string,
): Promise<{ pong: boolean; error: string }> {
  const { port } = new URL(url);
  const socket = createConnection({ host: '127.0.0.1', port: Number(port) });
  await once(socket, 'data');
  const secure = tlsConnect({ socket, ca: await readFile(caFile), servername: 'localhost' });
  let received = '';
  let error = '';
  secure.on('data', (chunk) => {
    received += chunk;
  });
  secure.on('error', (cause: Error) => {
    error = cause.message;
  });
  secure.once('secureConnect', () => secure.write('CONNECT {"verbose":false}\r\nPING\r\n'));
  await Promise.race([new Promise((closed) => secure.once('close', closed)), sleep(5000)]);
  secure.destroy();
  return { pong: received.includes('PONG'), error };
}

const ROLES = ['collector', 'owner', 'admin'] as const;
type Role = (typeof ROLES)[number];

interface Printed {
  bus: string;
  nodes: { name: string; url: string; file: string | null; config: string }[];
}

let dir: string;
let ca: PrivateCa;
let nodes: RunningNodes | undefined;
let printed: Printed;
const creds = new Map<Role, string>();
const running: ChildServer[] = [];
const connections: BusConnection[] = [];

/** What `--bus-ca`, `--bus-cert` and `--bus-key` give a process of this cluster. */
const tlsFlags = () => [
  '--bus-ca',
  ca.caFile,
  '--bus-cert',
  ca.clientCert,
  '--bus-key',
  ca.clientKey,
];
const busFlags = (role: Role) => [
  '--bus',
  printed.bus,
  '--bus-creds',
  creds.get(role) as string,
  ...tlsFlags(),
];
const settings = (role: Role): BusSettings => ({
  servers: printed.bus.split(','),
  credsPath: creds.get(role),
  caPath: ca.caFile,
  certPath: ca.clientCert,
  keyPath: ca.clientKey,
});
const connect = async (role: Role, override: Partial<BusSettings> = {}) => {
  const connection = await connectBus({ ...settings(role), ...override }, role);
  connections.push(connection);
  return connection;
};

/**
 * The operator's procedure of docs/scaling.md, from the package alone: a private CA made with
 * openssl, a password per role hashed by `cds bus passwd`, each node's configuration printed by
 * `cds bus config`, Debian's nats-server started on them, and `cds bus init`.
 */
beforeAll(async () => {
  dir = tempDir();
  const tlsDir = join(dir, 'tls');
  await mkdir(tlsDir);
  // With an IP address in its URL, the Node client checks the certificate for `localhost`.
  ca = await makePrivateCa(tlsDir, ['127.0.0.1', 'localhost']);
  const hashes = new Map<Role, string>();
  for (const role of ROLES) {
    const password = randomBytes(18).toString('base64url');
    const path = join(dir, `${role}.json`);
    await writeFile(path, JSON.stringify({ user: role, password }), { mode: 0o600 });
    creds.set(role, path);
    const hashed = await cdsWithInput(['bus', 'passwd', '--cost', '4'], `${password}\n`);
    expect(hashed.code, hashed.stderr).toBe(0);
    hashes.set(role, hashed.stdout.trim());
  }
  const ports: number[][] = [];
  for (let index = 0; index < 3; index += 1)
    ports.push([await freePort(), await freePort(), await freePort()]);
  // As docs/scaling.md makes it: base64, whose + / = the route URLs must carry escaped.
  const routeCreds = join(dir, 'route.json');
  await writeFile(
    routeCreds,
    JSON.stringify({ user: 'route', password: `${randomBytes(18).toString('base64')}+/=` }),
  );
  const storeDir = join(dir, 'store');
  const result = await runCli([
    'bus',
    'config',
    ...ports.flatMap((node) => ['--node', `127.0.0.1:${node.join(':')}`]),
    '--collector-hash',
    hashes.get('collector') as string,
    '--owner-hash',
    hashes.get('owner') as string,
    '--admin-hash',
    hashes.get('admin') as string,
    '--route-creds',
    routeCreds,
    '--store-dir',
    storeDir,
    '--max-file-store',
    '1GB',
    '--tls-ca',
    ca.caFile,
    '--tls-cert',
    ca.serverCert,
    '--tls-key',
    ca.serverKey,
    '--tls-verify',
    '--out-dir',
    join(dir, 'nats'),
    '--json',
  ]);
  expect(result.code, result.stderr).toBe(0);
  printed = JSON.parse(result.stdout) as Printed;
  const configs = printed.nodes.map((node) => node.file as string);
  const nodeConfigs: NodeConfig[] = printed.nodes.map((node, index) => {
    const [clientPort, clusterPort, monitorPort] = ports[index] as number[];
    return {
      name: node.name,
      host: '127.0.0.1',
      clientPort: clientPort as number,
      clusterPort: clusterPort as number,
      monitorPort: monitorPort as number,
      storeDir: join(storeDir, node.name),
    };
  });
  nodes = await runNodes(join(dir, 'nats'), nodeConfigs, configs);
  const init = await runCli(['bus', 'init', ...busFlags('admin'), '--json']);
  expect(init.code, init.stderr).toBe(0);
}, 90_000);

afterAll(async () => {
  await Promise.all(running.map((child) => child.stop()));
  await Promise.all(connections.map((connection) => connection.close().catch(() => undefined)));
  await nodes?.stop();
});

describe('cds bus config and cds bus passwd: a closed bus with TLS from a private CA', () => {
  it('prints configurations with hashed passwords, TLS for clients and routes, and tls:// URLs', async () => {
    expect(printed.bus).toMatch(/^tls:\/\/127\.0\.0\.1:\d+(,tls:\/\/127\.0\.0\.1:\d+){2}$/);
    expect(printed.nodes.map((node) => node.name)).toEqual(['n1', 'n2', 'n3']);
    const config = await readFile(printed.nodes[0]?.file as string, 'utf8');
    expect(config).toBe(printed.nodes[0]?.config);
    const passwords = [...config.matchAll(/user: "(collector|owner|admin)", password: "([^"]+)"/g)];
    expect(passwords.map((match) => match[1])).toEqual(['collector', 'owner', 'admin']);
    for (const [, role, hash] of passwords) {
      expect(hash).toMatch(/^\$2b\$04\$/);
      const plain = JSON.parse(await readFile(creds.get(role as Role) as string, 'utf8')).password;
      expect(await compare(plain, hash as string)).toBe(true);
      expect(config).not.toContain(plain);
    }
    // Clients must present a certificate; routes too, inside cluster {}.
    expect(config.match(/tls \{[^}]*verify: true/g)).toHaveLength(2);
  });

  it('carries events from a collector to their owner over TLS', async () => {
    const ownerDir = join(dir, 'owner');
    await seedShardDir(ownerDir, ['tlsco']);
    const owner = await startCli(
      ['serve', ...busFlags('owner'), '--shard', 's', '--port', '0', '--quiet', '-d', ownerDir],
      /cds listening on (http:\/\/\S+)/,
      60_000,
      { CDS_MASTER_KEY: SHARED_MASTER_KEY },
    );
    running.push(owner);
    const collector = await startCli(
      ['--data-dir', tempDir(), 'collect', '--port', '0'],
      /collector listening on (http:\/\/\S+)/,
      60_000,
      // The environment's names for the same flags.
      {
        CDS_BUS: printed.bus,
        CDS_BUS_CREDS: creds.get('collector'),
        CDS_BUS_CA: ca.caFile,
        CDS_BUS_CERT: ca.clientCert,
        CDS_BUS_KEY: ca.clientKey,
      },
    );
    running.push(collector);
    const ids = ['tls-1', 'tls-2', 'tls-3'];
    for (const id of ids) {
      const response = await fetch(`${collector.url}/v1/events`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-tenant-id': 'tlsco',
          'x-workspace-id': 'w1',
        },
        body: JSON.stringify({
          envelop_version: '1.0',
          id,
          name: 'page_viewed',
          tenant_id: 'tlsco',
          workspace_id: 'w1',
          anon_id: 'cookie:tls',
          occured_at: new Date().toISOString(),
          properties: {},
        }),
      });
      expect(response.status, await response.text()).toBe(202);
    }
    await waitDrained(await connect('admin'), ['tlsco']);
    await collector.stop();
    expect(await owner.stop()).toBe(0);
    const rows = await shardRows(ownerDir);
    expect([...(rows.events.get('tlsco')?.keys() ?? [])].sort()).toEqual(ids);
  }, 120_000);

  it('refuses a client that does not trust the private CA, and one without a certificate', async () => {
    await expect(connect('collector', { caPath: undefined })).rejects.toThrow(
      /unable to verify the first certificate/,
    );
    // Under TLS 1.3 the client finishes its handshake before the node checks its certificate, and
    // the node's refusal comes as an alert after it.
    const answer = await speakWithoutCertificate(printed.nodes[0]?.url as string, ca.caFile);
    expect(answer).toEqual({ pong: false, error: expect.stringMatching(/alert bad certificate/) });
    const log = await readFile(join(dir, 'nats', 'n1.log'), 'utf8');
    expect(log).toMatch(/TLS handshake error: tls: client didn't provide a certificate/);
    const noCa = await runCli([
      'bus',
      'init',
      '--bus',
      printed.bus,
      '--bus-creds',
      creds.get('admin') as string,
    ]);
    expect(noCa.code).toBe(2);
    expect(noCa.stderr).toMatch(
      /^cds: --bus: cannot connect to tls:\/\/.* as admin: .*certificate/m,
    );
    const missingKey = await runCli(['bus', 'init', ...busFlags('admin').slice(0, -2)]);
    expect(missingKey.code).toBe(2);
    expect(missingKey.stderr).toMatch(/--bus-key: is required with the other/);
    const unreadable = await runCli([
      'bus',
      'init',
      ...busFlags('admin').slice(0, 4),
      '--bus-ca',
      join(dir, 'no-such-ca.pem'),
    ]);
    expect(unreadable.code).toBe(2);
    expect(unreadable.stderr).toMatch(/--bus-ca: .*no-such-ca\.pem cannot be read/);
  });

  it('cds bus step-down moves the stream leader to another node, as the admin only', async () => {
    const admin = await connect('admin');
    const before = (await (await admin.manager()).streams.info(EVENTS_STREAM)).cluster?.leader;
    const result = await runCli(['bus', 'step-down', ...busFlags('admin'), '--json']);
    expect(result.code, result.stderr).toBe(0);
    const moved = JSON.parse(result.stdout);
    expect(moved).toMatchObject({ stream: EVENTS_STREAM, from: before });
    expect(moved.to).toMatch(/^n[123]$/);
    expect(moved.to).not.toBe(before);
    const asOwner = await runCli([
      'bus',
      'step-down',
      ...busFlags('owner'),
      '--timeout-seconds',
      '3',
    ]);
    expect(asOwner.code).toBe(2);
    expect(asOwner.stderr).toMatch(
      /--bus-creds: the bus refused these credentials .*needs the admin/,
    );
  }, 60_000);
});

describe('cds bus config: bad usage', () => {
  const hash = '$2b$04$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234';
  const base = [
    'bus',
    'config',
    '--node',
    'n1.internal',
    '--owner-hash',
    hash,
    '--admin-hash',
    hash,
  ];

  it.each([
    [[...base], /required option '--collector-hash <bcrypt>' not specified/],
    [[...base, '--collector-hash', 'plain-password'], /--collector-hash: must be a bcrypt hash/],
    [
      [...base, '--collector-hash', hash, '--tls-ca', '/etc/ca.pem'],
      /--tls-ca: goes with --tls-cert and --tls-key/,
    ],
    [[...base, '--collector-hash', hash, '--tls-verify'], /--tls-verify: needs --tls-ca/],
    [
      [...base, '--collector-hash', hash, '--node', 'bad host'],
      /--node: "bad host" is not a host name/,
    ],
    [
      [...base, '--collector-hash', hash, '--store-dir', 'relative'],
      /--store-dir: must be an absolute path/,
    ],
    [
      [...base, '--collector-hash', hash, '--route-creds', '/no/such/route.json'],
      /--route-creds: \/no\/such\/route\.json cannot be read/,
    ],
    [
      [...base, '--collector-hash', hash, '--max-file-store', 'lots'],
      /--max-file-store: must be a size/,
    ],
  ])('%j exits 2 naming the flag', async (args, message) => {
    const result = await cdsInProcess(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stdout).toBe('');
  });

  it('prints one node per --node, each with every route, and the --bus value', async () => {
    const result = await cdsInProcess([
      ...base,
      '--collector-hash',
      hash,
      '--node',
      'n2.internal',
      '--node',
      'n3.internal:4223:6223:8223',
      '--listen',
      '0.0.0.0',
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^# cds processes connect with --bus nats:\/\/n1\.internal:4222,nats:\/\/n2\.internal:4222,nats:\/\/n3\.internal:4223$/m,
    );
    expect(result.stdout.match(/^server_name: /gm)).toHaveLength(3);
    expect(result.stdout).toContain('listen: "0.0.0.0:6222"');
    expect(result.stdout).toContain('@n3.internal:6223"');
    expect(result.stdout).toContain('store_dir: "/var/lib/nats/n3"');
  });
});

describe('cds bus passwd', () => {
  it('refuses an empty password and one bcrypt would cut short', async () => {
    const empty = await cdsWithInput(['bus', 'passwd'], '\n');
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/password: is empty/);
    const long = await cdsWithInput(['bus', 'passwd'], 'x'.repeat(73));
    expect(long.code).toBe(2);
    expect(long.stderr).toMatch(/password: is 73 bytes; bcrypt reads only the first 72/);
  });

  it('asks twice at a terminal and refuses two entries that differ', async () => {
    // script(1) (util-linux, in every Debian) gives cds a terminal and types into it.
    const typed = (input: string) =>
      new Promise<string>((resolve) => {
        const child = execFile(
          'script',
          [
            '-q',
            '-c',
            `${process.execPath} ${CDS_BIN} bus passwd --cost 4; echo "exit=$?"`,
            '/dev/null',
          ],
          (_error, stdout) => resolve(stdout),
        );
        child.stdin?.end(input);
      });
    const same = await typed('sesame\rsesame\r');
    const hash = /\$2b\$04\$\S{53}/.exec(same)?.[0] ?? '';
    expect(await compare('sesame', hash)).toBe(true);
    expect(same).toMatch(/password: \r?\nagain: /);
    expect(same).toMatch(/exit=0/);
    const differ = await typed('sesame\rother\r');
    expect(differ).toMatch(/cds: password: the two entries differ\r?\nexit=2/);
  });

  it('hashes at cost 11 by default, as nats server passwd does', async () => {
    const result = await cdsWithInput(['bus', 'passwd', '--json'], 'sesame');
    expect(result.code, result.stderr).toBe(0);
    const { hash } = JSON.parse(result.stdout);
    expect(hash).toMatch(/^\$2b\$11\$/);
    expect(await compare('sesame', hash)).toBe(true);
  });
});
