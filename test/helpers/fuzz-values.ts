import fc from 'fast-check';

/**
 * A JSON fragment written as it is: numbers `JSON.parse` would round (2^63, 1e309) and nesting
 * deeper than an object built here could be serialised.
 */
export class RawJson {
  constructor(readonly text: string) {}
}

export type Json = null | boolean | number | string | RawJson | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** An object whose keys are own keys whatever they spell, `__proto__` included. */
export function jsonObject(entries: Iterable<readonly [string, Json]>): JsonObject {
  const object: JsonObject = Object.create(null);
  for (const [key, value] of entries) object[key] = value;
  return object;
}

/** The JSON text of a value, keys such as `__proto__` written as the keys they are. */
export function jsonText(value: Json): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(jsonText).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.keys(value).map(
      (key) => `${JSON.stringify(key)}:${jsonText(value[key] as Json)}`,
    );
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Spellings that break code keying plain objects, building JSON paths or SQL, or reading ids. */
export const HOSTILE_WORDS = [
  'constructor',
  '__proto__',
  'toString',
  'prototype',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
  '$',
  '$x',
  '$.a',
  '$[0]',
  '.',
  '..',
  'a.b',
  '"',
  "'",
  '[',
  ']',
  '\\',
  '*',
  '?',
  '#',
  '/',
  '../../etc/passwd',
  '%00',
  '\u0000',
  '\ud800',
  '\udfff',
  'a\ud800b',
  '\u202e',
  '😀',
  'é',
  'İ',
  '',
  ' ',
  '\n',
  '\t',
  'null',
  'undefined',
  'NaN',
  'Infinity',
  '-1',
  '0',
  "'; DROP TABLE events; --",
  'properties.identifiers.email',
  '<script>alert(1)</script>',
] as const;

/** Ids that the id rules accept but that name a property of every plain object. */
export const PROTOTYPE_IDS = [
  'constructor',
  'prototype',
  'tostring',
  'valueof',
  'hasownproperty',
] as const;

/** Number literals that lose precision, overflow or underflow on the way in. */
const HOSTILE_NUMBER_LITERALS = [
  '9223372036854775808',
  '9223372036854775807',
  '-9223372036854775808',
  '-9223372036854775809',
  '18446744073709551616',
  '9007199254740993',
  '2147483648',
  '1e308',
  '-1e308',
  '1e309',
  '-1e309',
  '1e-400',
  '4.9e-324',
  '-0',
  '0.1',
  '1.5',
  `1${'0'.repeat(400)}`,
  '123456789012345678901234567890',
];

const longString = fc
  .constantFrom(65, 129, 201, 257, 321, 1001, 2001, 40_000)
  .map((n) => 'a'.repeat(n));

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...HOSTILE_WORDS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
  { weight: 1, arbitrary: longString },
);

export const hostileNumber: fc.Arbitrary<Json> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_NUMBER_LITERALS).map((n) => new RawJson(n)) },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  {
    weight: 1,
    arbitrary: fc
      .bigInt({ min: -(2n ** 128n), max: 2n ** 128n })
      .map((n) => new RawJson(n.toString())),
  },
);

/** Arrays or objects nested far deeper than any route reads. */
export const deepNesting: fc.Arbitrary<Json> = fc
  .tuple(fc.constantFrom(64, 512, 5000, 20_000), fc.boolean())
  .map(([depth, objects]) =>
    objects
      ? new RawJson(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`)
      : new RawJson(`${'['.repeat(depth)}${']'.repeat(depth)}`),
  );

const prototypeObject: fc.Arbitrary<Json> = fc.constantFrom<Json>(
  jsonObject([['__proto__', { polluted: true }]]),
  jsonObject([['__proto__', null]]),
  jsonObject([['constructor', { prototype: { polluted: true } }]]),
  jsonObject([['toString', 'x']]),
);

export const hostileKey: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...HOSTILE_WORDS) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
);

export const hostileValue: fc.Arbitrary<Json> = fc.oneof(
  { weight: 3, arbitrary: hostileNumber },
  { weight: 3, arbitrary: hostileString },
  { weight: 1, arbitrary: fc.constantFrom<Json>(null, true, false, [], {}) },
  { weight: 1, arbitrary: deepNesting },
  { weight: 1, arbitrary: prototypeObject },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json> },
  { weight: 1, arbitrary: fc.array(hostileString, { maxLength: 3 }) },
);

/**
 * `base` with one field set to a hostile value, removed, added under a hostile key, or replaced.
 * The `kept` fields are never touched.
 */
export function mutated(base: JsonObject, kept: readonly string[] = []): fc.Arbitrary<Json> {
  const keys = Object.keys(base).filter((key) => !kept.includes(key));
  const copy = (change: (object: JsonObject) => void) => {
    const object = jsonObject(Object.entries(base));
    change(object);
    return object;
  };
  const changes: fc.Arbitrary<Json>[] = [
    fc
      .tuple(hostileKey, hostileValue)
      .filter(([key]) => !kept.includes(key))
      .map(([key, value]) =>
        copy((object) => {
          object[key] = value;
        }),
      ),
    hostileValue.filter(
      (value) =>
        value === null ||
        typeof value !== 'object' ||
        Array.isArray(value) ||
        value instanceof RawJson ||
        !kept.some((key) => Object.hasOwn(value, key)),
    ),
    fc.constant([base]),
  ];
  if (keys.length > 0) {
    changes.push(
      fc.tuple(fc.constantFrom(...keys), hostileValue).map(([key, value]) =>
        copy((object) => {
          object[key] = value;
        }),
      ),
      fc.constantFrom(...keys).map((key) =>
        copy((object) => {
          delete object[key];
        }),
      ),
    );
  }
  return fc.oneof(...changes);
}

/** Either a valid-shaped value or one mutation of it. */
export function validOrMutated(
  valid: fc.Arbitrary<JsonObject>,
  kept: readonly string[] = [],
): fc.Arbitrary<Json> {
  return fc.oneof(
    { weight: 3, arbitrary: valid },
    { weight: 2, arbitrary: valid.chain((base) => mutated(base, kept)) },
  );
}

/**
 * URL text of a string: percent-encoded UTF-8, except that a lone surrogate is written as the
 * three bytes it would take (ED A0 80 for U+D800), which is no valid UTF-8.
 */
export function urlText(value: string): string {
  let text = '';
  for (let index = 0; index < value.length; index++) {
    const unit = value.charCodeAt(index);
    const next = value.charCodeAt(index + 1);
    if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      text += encodeURIComponent(value.slice(index, index + 2));
      index++;
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      text += [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)]
        .map((byte) => `%${byte.toString(16).toUpperCase()}`)
        .join('');
    } else {
      text += encodeURIComponent(value[index] as string);
    }
  }
  return text;
}

/** Path or query text as sent, not encoded again: escapes that decode to nothing valid. */
const RAW_URL_TEXT = [
  '%00',
  '%',
  '%zz',
  '%E0%A4%A',
  '%C0%AF',
  '%ED%A0%80',
  '%FF',
  '%2e%2e',
  '%2F',
  'a%2Fb',
  '..',
  '.',
  '%20',
  '+',
  ';',
  ':x',
];

/**
 * An element of a pool that grows while the run goes (what earlier requests created), read when
 * the value is drawn. The pool is never empty.
 */
export function liveValue(pool: readonly string[]): fc.Arbitrary<string> {
  return fc.nat().map((index) => pool[index % pool.length] as string);
}

/** A path segment or query value: mostly one that names something real, else a hostile one. */
export function urlValue(valid: fc.Arbitrary<string> | null): fc.Arbitrary<string> {
  const arbitraries: fc.WeightedArbitrary<string>[] = [
    { weight: 1, arbitrary: fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,63}$/) },
    { weight: 2, arbitrary: hostileString.map(urlText) },
    { weight: 1, arbitrary: fc.constantFrom(...RAW_URL_TEXT) },
    { weight: 1, arbitrary: fc.constantFrom(...PROTOTYPE_IDS) },
  ];
  if (valid) arbitraries.push({ weight: 4, arbitrary: valid.map(urlText) });
  return fc.oneof(...arbitraries);
}

/** Header values a client can put on the wire: Latin-1 without line breaks or NUL. */
export const hostileHeaderValue: fc.Arbitrary<string> = hostileString.filter((value) =>
  /^[\t\x20-\x7e\x80-\xff]*$/.test(value),
);
