import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  BoxOpener,
  boxingKeyFor,
  busPublicKey,
  newBusKeyId,
  UnopenableBoxError,
} from '../../src/bus/identifier-box.js';
import { type EventCatalog, type IntakeScope, intake } from '../../src/collector/accept.js';
import { ingestIsolating } from '../../src/ingest/isolate.js';
import {
  listQuarantine,
  type QuarantinedFile,
  quarantinedLinesPath,
} from '../../src/quarantine/quarantine.js';
import { openBoxes } from '../../src/shards/bus-boxes.js';
import type { BusEvent } from '../../src/shards/bus-event.js';
import { readOffsets, streamSource } from '../../src/shards/stream-source.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

let env: TestEnv;
let tokens: Tokens;

beforeEach(async () => {
  ({ env, tokens } = await openSeededEnv());
});
afterEach(() => env.close());

/** Every workspace and event type exists: what is checked here is the line, not the registry. */
const anything: EventCatalog = { hasWorkspace: () => true, hasEventType: () => true };
const RECEIVED_AT = '2026-03-01T11:00:00.000Z';

function publishedKey(masterKey: Buffer) {
  const keyId = newBusKeyId();
  return { key_id: keyId, public_key: busPublicKey(masterKey, keyId), created_at: RECEIVED_AT };
}

/** The line the collector writes for `event`, boxed to `masterKey`'s bus key unless null. */
function lineOf(event: Record<string, unknown>, masterKey: Buffer | null, tenantId = 'acme') {
  const scope: IntakeScope = {
    source: 'server',
    tenantId,
    workspaceId: null,
    ...(masterKey ? { box: boxingKeyFor(publishedKey(masterKey)) } : {}),
  };
  const { lines, faults } = intake(anything, [event], scope, RECEIVED_AT, 'cbus');
  expect(faults).toEqual([]);
  return lines[0]?.text as string;
}

function busEvent(seq: number, text: string, tenantId = 'acme'): BusEvent {
  return { tenantId, workspaceId: 'eu', seq, index: 0, endsMessage: true, data: Buffer.from(text) };
}

describe('identifier boxes', () => {
  it('hold no identifier value, and open into the very line a landing file holds', () => {
    const spec = {
      id: 'e1',
      identifiers: { email: 'Box.Person@Example.com', phone: '9876543210' },
    };
    const boxed = lineOf(envelope(spec), env.context.dataDir.masterKey);
    expect(boxed).not.toMatch(/box\.person|9876543210/i);
    expect(boxed).toMatch(/"identifiers":"cdsbox1\.bk[0-9a-f]{16}\./);
    const { opened, unopenable } = openBoxes(env.context, [busEvent(1, boxed)]);
    expect(unopenable).toEqual([]);
    expect(Buffer.from(opened[0]?.data ?? []).toString()).toBe(lineOf(envelope(spec), null));
  });

  it('open only for the tenant they were made for, under the master key they were made to', () => {
    const masterKey = randomBytes(32);
    const boxing = boxingKeyFor(publishedKey(masterKey));
    const scope: IntakeScope = {
      source: 'server',
      tenantId: 'acme',
      workspaceId: null,
      box: boxing,
    };
    const text = intake(
      anything,
      [envelope({ identifiers: { email: 'a@b.test' } })],
      scope,
      RECEIVED_AT,
      'c',
    ).lines[0]?.text as string;
    const box = (JSON.parse(text) as { event: { properties: { identifiers: string } } }).event
      .properties.identifiers;
    expect(new BoxOpener(masterKey).open(box, 'acme')).toBe('{"email":"a@b.test"}');
    expect(() => new BoxOpener(masterKey).open(box, 'other')).toThrow(UnopenableBoxError);
    expect(() => new BoxOpener(randomBytes(32)).open(box, 'acme')).toThrow(UnopenableBoxError);
    const tampered = `${box.slice(0, -2)}${box.endsWith('AA') ? 'BB' : 'AA'}`;
    expect(() => new BoxOpener(masterKey).open(tampered, 'acme')).toThrow(UnopenableBoxError);
    expect(() => new BoxOpener(masterKey).open('cdsbox1.nope', 'acme')).toThrow(
      'not an identifier box',
    );
  });

  it('keep an event within the same 32 KiB on the bus as in a file', () => {
    const identifiers = { email: 'big@example.com' };
    // A line just under the limit as a file holds it; boxing makes it longer.
    const filler = (size: number) =>
      envelope({ id: 'big', identifiers, properties: { filler: 'x'.repeat(size) } });
    const plainLength = Buffer.byteLength(lineOf(filler(0), null));
    const largest = filler(32 * 1024 - plainLength);
    expect(Buffer.byteLength(lineOf(largest, null))).toBe(32 * 1024);
    expect(Buffer.byteLength(lineOf(largest, env.context.dataDir.masterKey))).toBeGreaterThan(
      32 * 1024,
    );
    const scope: IntakeScope = {
      source: 'server',
      tenantId: 'acme',
      workspaceId: null,
      box: boxingKeyFor(publishedKey(env.context.dataDir.masterKey)),
    };
    const over = intake(
      anything,
      [filler(32 * 1024 - plainLength + 1)],
      scope,
      RECEIVED_AT,
      'cbus',
    );
    expect(over.faults.map((fault) => fault.code)).toEqual(['event_too_large']);
  });
});

describe('an owner batch of boxed lines', () => {
  it('stores and resolves the identifiers, and quarantines an event whose box does not open', async () => {
    const stored = lineOf(
      envelope({ id: 'ok', identifiers: { email: 'owner.opens@example.com' } }),
      env.context.dataDir.masterKey,
    );
    const foreign = lineOf(
      envelope({ id: 'foreign', identifiers: { email: 'foreign.key@example.com' } }),
      randomBytes(32),
    );
    const outcome = await ingestIsolating(env.context, streamSource(env.context), [
      busEvent(1, stored),
      busEvent(2, foreign),
    ]);
    expect(outcome.batches.map((batch) => batch.stored)).toEqual([1]);
    expect(outcome.quarantined).toHaveLength(1);
    const lookup = (email: string) =>
      call(
        env.app,
        tokens.workspace,
        'GET',
        `/v1/tenants/acme/workspaces/eu/profiles/lookup?email=${encodeURIComponent(email)}`,
      );
    expect((await lookup('owner.opens@example.com')).statusCode).toBe(200);
    expect((await lookup('foreign.key@example.com')).statusCode).toBe(404);
    const [record] = await listQuarantine(env.context.dataDir);
    expect(record?.reason).toContain('does not open');
    // Set aside as it came: still boxed.
    const kept = await readFile(
      quarantinedLinesPath(env.context.dataDir, record as QuarantinedFile),
      'utf8',
    );
    expect(kept).toContain('cdsbox1.');
    expect(kept).not.toContain('foreign.key');
    // Its sequence is recorded as done, so its redelivery is skipped like the stored one's.
    expect(await readOffsets(env.context)).toEqual(new Map([['acme', 2]]));
  });
});
