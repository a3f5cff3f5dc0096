import { describe, expect, it } from 'vitest';
import {
  builtLandingLineText,
  type Envelope,
  envelopeSchema,
  landingLineText,
} from '../../src/collector/envelope.js';

const RECEIVED = '2026-03-01T12:00:00.000Z';

const built: Envelope = envelopeSchema.parse({
  envelop_version: '1.0',
  id: '0e5a3c1e-6f0b-8a4d-9c3b-2f1e0d9c8b7a',
  name: 'order_completed',
  tenant_id: 'acme',
  workspace_id: 'eu',
  anon_id: 'cookie:visitor "1" \\ é',
  occured_at: '2026-03-01T10:00:00.000Z',
  properties: { note: 'a "quoted" line\nwith ü', identifiers: { email: 'Ann@Shop.test' } },
});
const { anon_id: _anonId, ...withoutAnonId } = built;

describe('a landing line (design §2)', () => {
  it.each([
    ['with anon_id, through the Segment tracking API', built, 'segment_api' as const],
    ['with anon_id, through cds’s own routes', built, undefined],
    ['without anon_id, through the Segment tracking API', withoutAnonId, 'segment_api' as const],
    ['without anon_id, through cds’s own routes', withoutAnonId, undefined],
  ])('is the same text built by hand for a built envelope: %s', (_what, event, intake) => {
    const text = landingLineText(RECEIVED, 'server', 'c1', event, intake);
    expect(builtLandingLineText(RECEIVED, 'server', 'c1', event, intake)).toBe(text);
    expect(text.endsWith('}\n')).toBe(true);
    expect(JSON.parse(text)).toEqual({
      received_at: RECEIVED,
      source: 'server',
      ...(intake === undefined ? {} : { intake }),
      collector_id: 'c1',
      event,
    });
  });

  it('names no intake on a line of cds’s own routes, so it reads as lines always did', () => {
    const text = landingLineText(RECEIVED, 'browser', 'c1', built);
    expect(Object.keys(JSON.parse(text))).toEqual([
      'received_at',
      'source',
      'collector_id',
      'event',
    ]);
  });
});
