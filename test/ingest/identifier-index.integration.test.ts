import { copyFileSync, existsSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { identifierIndexOf } from '../../src/ingest/identifier-index.js';
import { saveIndexes } from '../../src/ingest/saved-indexes.js';
import { savedIndexPath } from '../../src/store/index-files.js';
import { openTestEnvIn, type TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

/**
 * The identifier index answers a batch's known keys, profile ages and identifier counts by type
 * from memory (docs/decisions.md, "Identifier index"): followed from commits in one process, and
 * built from the tables in the next, or when an erasure changed them.
 */
describe('identifier index', () => {
  let env: TestEnv;
  let tokens: Tokens;
  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
    const email = await call(
      env.app,
      tokens.tenant,
      'PUT',
      '/v1/tenants/acme/identifier-types/email',
      {
        tier: 'strong',
        max_per_profile: 2,
      },
    );
    expect(email.statusCode, email.body).toBeLessThan(300);
  });
  afterEach(() => env.close());

  const visit = (cookie: string, email: string) =>
    envelope({ anon: cookie, identifiers: { email } });
  const ingest = async (...events: Record<string, unknown>[]) => {
    const sent = await sendServer(env, tokens.collector, events);
    expect(sent.statusCode, sent.body).toBe(202);
    env.clock.advance(1_000);
    await env.ingest();
  };
  const rows = <T>(text: string) => env.context.store.read((session) => session.allText<T>(text));
  const profileOf = async (email: string): Promise<string> => {
    const found = await call(
      env.app,
      tokens.tenant,
      'GET',
      `/v1/tenants/acme/workspaces/eu/profiles/lookup?email=${encodeURIComponent(email)}`,
    );
    expect(found.statusCode, found.body).toBe(200);
    return found.json().profile_id as string;
  };
  const emailsOfLiveProfiles = () =>
    rows<{ emails: number }>(
      `SELECT count(*) AS emails FROM profile_identifiers i
       JOIN profiles p USING (tenant_id, workspace_id, profile_id)
       WHERE p.merged_into IS NULL AND i.identifier_type = 'email'
       GROUP BY i.profile_id ORDER BY ALL`,
    );
  const conflicts = async () =>
    (
      await rows<{ n: number }>(
        "SELECT count(*) AS n FROM identity_conflicts WHERE reason = 'max_per_profile'",
      )
    )[0]?.n;

  it("counts a merged profile's identifiers with its survivor's, followed across batches and built again after a restart", async () => {
    await ingest(visit('c1', 'a1@shop.test'), visit('c2', 'a2@shop.test'));
    // c1's profile and a2's become one, holding both emails: the limit of two is reached.
    await ingest(envelope({ anon: 'c1', identifiers: { email: 'a2@shop.test' } }));
    const survivor = await profileOf('a1@shop.test');
    expect(await profileOf('a2@shop.test')).toBe(survivor);
    expect(await emailsOfLiveProfiles()).toEqual([{ emails: 2 }]);

    // A third email on the cluster, through the key of the profile merged away: refused.
    await ingest(visit('c2', 'a3@shop.test'));
    expect(await emailsOfLiveProfiles()).toEqual([{ emails: 2 }]);
    expect(await conflicts()).toBe(1);

    await env.close({ keepDir: true });
    env = await openTestEnvIn(env.dir, { collector: true });
    await ingest(visit('c1', 'a4@shop.test'));
    expect(await emailsOfLiveProfiles()).toEqual([{ emails: 2 }]);
    expect(await conflicts()).toBe(2);
    // A key it knows still leads to the cluster's survivor.
    await ingest(visit('c2', 'a1@shop.test'));
    expect(await profileOf('a1@shop.test')).toBe(survivor);
    expect(
      await rows<{ profiles: number }>(
        'SELECT count(*) AS profiles FROM profiles WHERE merged_into IS NULL',
      ),
    ).toEqual([{ profiles: 1 }]);
  });

  it('takes an erased person’s email as new when it comes again, in the process that erased it', async () => {
    await ingest(visit('c1', 'ada@shop.test'), visit('c2', 'bob@shop.test'));
    const erasedProfile = await profileOf('ada@shop.test');
    const erased = await call(
      env.app,
      tokens.tenant,
      'DELETE',
      `/v1/tenants/acme/workspaces/eu/profiles/${erasedProfile}`,
    );
    expect(erased.statusCode, erased.body).toBeLessThan(300);
    env.clock.advance(60_000);

    await ingest(visit('c3', 'ada@shop.test'));
    const again = await profileOf('ada@shop.test');
    expect(again).not.toBe(erasedProfile);
    await ingest(visit('c2', 'bob@shop.test'), visit('c3', 'ada@shop.test'));
    expect(await profileOf('ada@shop.test')).toBe(again);
    expect(await rows<{ profiles: number }>('SELECT count(*) AS profiles FROM profiles')).toEqual([
      { profiles: 2 },
    ]);
  });

  it('is saved for the next process, which takes it only while the tables are what it was saved from', async () => {
    await ingest(visit('c1', 'a1@shop.test'), visit('c2', 'a2@shop.test'));
    await ingest(envelope({ anon: 'c1', identifiers: { email: 'a2@shop.test' } }));
    await saveIndexes(env.context.store);
    const path = savedIndexPath(env.context.store, 'identifier') as string;
    expect(existsSync(path)).toBe(true);
    copyFileSync(path, `${path}.then`);

    // Taken as saved: the merged cluster's two emails still limit it.
    await env.close({ keepDir: true });
    env = await openTestEnvIn(env.dir, { collector: true });
    await ingest(visit('c2', 'a3@shop.test'));
    expect(identifierIndexOf(env.context.store).source).toBe('saved');
    expect(await emailsOfLiveProfiles()).toEqual([{ emails: 2 }]);
    expect(await conflicts()).toBe(1);
    await ingest(visit('c9', 'b1@shop.test'));
    await saveIndexes(env.context.store);

    // A saved index the tables have moved past (b1's profile came after it) is not taken.
    await env.close({ keepDir: true });
    copyFileSync(`${path}.then`, path);
    env = await openTestEnvIn(env.dir, { collector: true });
    await ingest(visit('c9', 'b1@shop.test'), visit('c1', 'a4@shop.test'));
    expect(identifierIndexOf(env.context.store).source).toBe('tables');
    expect(await emailsOfLiveProfiles()).toEqual([{ emails: 1 }, { emails: 2 }]);
    expect(await conflicts()).toBe(2);

    // An erasure removes it: it holds the erased person's keys and ids.
    await saveIndexes(env.context.store);
    expect(existsSync(path)).toBe(true);
    const erased = await call(
      env.app,
      tokens.tenant,
      'DELETE',
      `/v1/tenants/acme/workspaces/eu/profiles/${await profileOf('b1@shop.test')}`,
    );
    expect(erased.statusCode, erased.body).toBeLessThan(300);
    expect(existsSync(path)).toBe(false);
  });
});
