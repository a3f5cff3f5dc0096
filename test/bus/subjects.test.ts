import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  durableName,
  eventMessageId,
  eventSubject,
  fromSubjectToken,
  subjectToken,
  tenantFilter,
  tenantKey,
  tenantOfKey,
  tenantOfSubject,
} from '../../src/bus/subjects.js';

/** The KV key check of the 3.x client: a token must pass it as part of `tenant.<T>`. */
const KV_KEY = /^[-/=.\w]+$/;
const RUNS = 20_000;
const MIN_RUNS = 20_000;

/** Ids from an alphabet of the characters that could break a subject, plus any unicode. */
const hostileId = fc.oneof(
  fc.string({
    unit: fc.constantFrom(
      '.',
      '*',
      '>',
      ' ',
      '\t',
      '\0',
      '~',
      '=',
      'é',
      '中',
      '😀',
      'a',
      'Z',
      '-',
      '_',
      '9',
      '\r',
      '\n',
    ),
    minLength: 1,
    maxLength: 24,
  }),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 24 }),
);

describe('subject tokens (docs/cluster-design.md §2)', () => {
  it('round-trips any id into one token no wildcard, dot or space can be part of', () => {
    let runs = 0;
    fc.assert(
      fc.property(hostileId, (id) => {
        runs += 1;
        const token = subjectToken(id);
        expect(token).toMatch(/^[a-z0-9_=A-F-]+$/);
        expect(`tenant.${token}`).toMatch(KV_KEY);
        expect(fromSubjectToken(token)).toBe(id);
      }),
      { numRuns: RUNS },
    );
    console.info(`subject tokens: ${runs} ids round-tripped (minimum ${MIN_RUNS})`);
    expect(runs).toBeGreaterThanOrEqual(MIN_RUNS);
  });

  it('gives two different ids two different tokens', () => {
    fc.assert(
      fc.property(hostileId, hostileId, (a, b) => {
        fc.pre(a !== b);
        expect(subjectToken(a)).not.toBe(subjectToken(b));
      }),
      { numRuns: 5_000 },
    );
  });

  it('keeps every id valid in the API as it is', () => {
    expect(subjectToken('acme')).toBe('acme');
    expect(subjectToken('shop_1-eu')).toBe('shop_1-eu');
    expect(eventSubject('acme', 'web')).toBe('cds.events.acme.web');
    expect(tenantFilter('acme')).toBe('cds.events.acme.>');
    expect(durableName('acme')).toBe('own-acme');
  });

  it("keeps a tenant named like another tenant's subject out of it", () => {
    expect(eventSubject('acme.web', 'x')).toBe('cds.events.acme=2Eweb.x');
    expect(eventSubject('*', '>')).toBe('cds.events.=2A.=3E');
    expect(subjectToken('Acme')).toBe('=41cme');
    expect(tenantOfSubject(eventSubject('a.b', 'w'))).toBe('a.b');
    expect(tenantOfKey(tenantKey('__proto__'))).toBe('__proto__');
  });

  it('refuses what no id encodes to, and an empty id', () => {
    expect(() => subjectToken('')).toThrow();
    for (const bad of ['', 'a.b', '=4', '=zz', '=61', 'A', '*'])
      expect(() => fromSubjectToken(bad), bad).toThrow();
  });

  it('scopes the message id by tenant and workspace, with no CR or LF in it', () => {
    expect(eventMessageId('acme', 'web', 'e1')).toBe('acme/web/e1');
    expect(eventMessageId('acme', 'web', 'a\r\nb')).toBe('acme/web/a=0D=0Ab');
    expect(eventMessageId('a', 'b/c', 'd')).not.toBe(eventMessageId('a/b', 'c', 'd'));
  });
});
