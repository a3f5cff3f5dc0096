import { describe, expectTypeOf, it } from 'vitest';
import type { dropErased, FirstSeen } from '../../src/ingest/first-seen.js';
import type { groupEventKeys } from '../../src/ingest/identifier-keys.js';
import type { resolveAndApply } from '../../src/ingest/identities.js';
import type { Staged } from '../../src/ingest/line-source.js';
import type { insertEvents } from '../../src/ingest/store-events.js';
import type { applyBatchToMetrics } from '../../src/metrics/materialize.js';

type Made<Step extends (...args: never[]) => Promise<unknown>> = Awaited<ReturnType<Step>>;

// The ingest steps' order is in their types: these cases do not compile if a step would take a
// table before the step that makes it (or changes it as the reader needs) has run.
describe('ingest steps', () => {
  it('store events only with the keys left once first seen is decided', () => {
    type Grouped = Made<typeof groupEventKeys>['eventKeys'];
    type Unerased = Made<typeof dropErased>['eventKeys'];
    type Stored = Parameters<typeof insertEvents>[0]['eventKeys'];
    expectTypeOf<Grouped>().not.toExtend<Stored>();
    expectTypeOf<Unerased>().not.toExtend<Stored>();
    expectTypeOf<FirstSeen['eventKeys']>().toExtend<Stored>();
  });

  it('give metrics the new profiles only once resolution has added every one', () => {
    type Resolved = Made<typeof resolveAndApply>;
    type ForMetrics = Parameters<typeof applyBatchToMetrics>[0];
    expectTypeOf<Resolved['newProfiles']>().toExtend<ForMetrics['newProfiles']>();
    expectTypeOf<Made<typeof dropErased>['erased']>().not.toExtend<Resolved['erased']>();
  });

  it('start from the staged lines, whatever their source', () => {
    expectTypeOf<Parameters<typeof resolveAndApply>[0]>().toEqualTypeOf<Staged>();
  });
});
