import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus } from '../../src/bus/connect.js';
import { BUCKETS } from '../../src/bus/setup.js';
import { eventMessageId, eventSubject } from '../../src/bus/subjects.js';
import { startTestCluster, type TestCluster } from '../helpers/nats-cluster.js';

let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startTestCluster();
}, 60_000);

afterAll(async () => {
  await cluster?.close();
});

const runId = `${process.pid}-${Date.now()}`;

describe('a closed bus (issue 30, item 7)', () => {
  it('refuses a client without credentials at connect', async () => {
    const { servers, caPath } = cluster.settings('collector');
    await expect(connectBus({ servers, caPath }, 'collector')).rejects.toThrow(
      /Authorization Violation/,
    );
  });

  it('refuses a client with a wrong password', async () => {
    const { writeFile } = await import('node:fs/promises');
    const path = `${cluster.creds.collector}.wrong`;
    await writeFile(path, JSON.stringify({ user: 'collector', password: 'not-it' }));
    await expect(
      connectBus({ ...cluster.settings('collector'), credsPath: path }, 'collector'),
    ).rejects.toThrow(/Authorization Violation/);
  });

  it('lets a collector publish events and nothing else that writes', async () => {
    const collector = await cluster.connect('collector');
    const ack = await collector.js.publish(eventSubject('acme', 'web'), '{}', {
      msgID: eventMessageId('acme', 'web', `e-${runId}`),
    });
    expect(ack.seq).toBeGreaterThan(0);
    await expect(collector.js.publish('other.subject', '{}')).rejects.toThrow(
      /Permissions Violation/,
    );
    await expect(collector.js.publish(`$KV.${BUCKETS.registry}.tenant.acme`, '{}')).rejects.toThrow(
      /Permissions Violation/,
    );
    const registry = await collector.kvm.open(BUCKETS.registry);
    await expect(registry.put('tenant.acme', '{}')).rejects.toThrow(/Permissions Violation/);
  });

  it('lets an owner publish events, as its own collector does, but not delete the stream', async () => {
    const owner = await cluster.connect('owner');
    const ack = await owner.js.publish(eventSubject('acme', 'web'), '{}', {
      msgID: eventMessageId('acme', 'web', `owner-${runId}`),
    });
    expect(ack.seq).toBeGreaterThan(0);
    await expect((await owner.manager()).streams.delete('CDS_EVENTS')).rejects.toThrow(
      /Permissions Violation/,
    );
    await expect(owner.js.publish('other.subject', '{}')).rejects.toThrow(/Permissions Violation/);
  });

  it('lets no collector read the events stream', async () => {
    const collector = await cluster.connect('collector');
    const manager = await collector.manager();
    await expect(
      manager.consumers.add('CDS_EVENTS', {
        durable_name: 'thief',
        filter_subject: 'cds.events.>',
      }),
    ).rejects.toThrow(/Permissions Violation/);
  });

  it('de-duplicates a republished copy of an event, per tenant and workspace', async () => {
    const collector = await cluster.connect('collector');
    const id = `same-${runId}`;
    const first = await collector.js.publish(eventSubject('acme', 'web'), '{}', {
      msgID: eventMessageId('acme', 'web', id),
    });
    const again = await collector.js.publish(eventSubject('acme', 'web'), '{}', {
      msgID: eventMessageId('acme', 'web', id),
    });
    const otherTenant = await collector.js.publish(eventSubject('globex', 'web'), '{}', {
      msgID: eventMessageId('globex', 'web', id),
    });
    expect(again).toMatchObject({ duplicate: true, seq: first.seq });
    expect(otherTenant.duplicate).toBe(false);
    const crlf = await collector.js.publish(eventSubject('acme', 'web'), '{}', {
      msgID: eventMessageId('acme', 'web', `a\r\nb-${runId}`),
    });
    expect(crlf.duplicate).toBe(false);
  });
});

describe('cds bus init', () => {
  it('is run again to resize the stream, changing nothing else', async () => {
    const { cdsInProcess } = await import('../helpers/cli-in-process.js');
    const bus = cluster.flags('admin');
    const result = await cdsInProcess(['bus', 'init', ...bus, '--max-age-hours', '26', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      stream: 'updated',
      buckets: ['cds_registry', 'cds_shards', 'cds_owners', 'cds_collectors'],
    });
    const admin = await cluster.connect('admin');
    const info = await (await admin.manager()).streams.info('CDS_EVENTS');
    expect(info.config.max_age).toBe(26 * 3600 * 1e9);
    expect(info.config.num_replicas).toBe(3);
  });

  it('refuses to run without the bus, or with credentials that may not create streams', async () => {
    const { cdsInProcess } = await import('../helpers/cli-in-process.js');
    const missing = await cdsInProcess(['bus', 'init']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--bus.*is required/);
    const asCollector = await cdsInProcess(['bus', 'init', ...cluster.flags('collector')]);
    expect(asCollector.code).toBe(2);
    expect(asCollector.stderr).toMatch(
      /--bus-creds: the bus refused these credentials .*Permissions Violation.*needs the admin/,
    );
    expect(asCollector.stderr).not.toMatch(/ {4}at /);
  });
});
