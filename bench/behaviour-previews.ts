import { putEventType } from '../src/catalog/event-types.js';
import type { Context } from '../src/context.js';
import { evaluateAfterMetricStep, runUpkeep } from '../src/ingest/upkeep.js';
import { inputsNeedCompaction } from '../src/metrics/compaction.js';
import { backfillDefinitions, hasPendingBackfill, metricTime } from '../src/metrics/materialize.js';
import { createSegment, DEFAULT_AUTOMATIONS } from '../src/segments/definitions.js';
import { evaluateAwaitingSegments, hasAwaitingSegments } from '../src/segments/evaluate.js';
import { CATEGORIES, openBenchContext, percentile, segmentPredicates } from './segments.js';
import { CDS_BIN, rate, startChild, stopChild, TENANT, WORKSPACES } from './setup.js';

const WORKSPACE = WORKSPACES[0];
/** Rounds of previews once the segments exist. */
const ROUNDS = Number(process.env.BENCH_BEHAVIOUR_ROUNDS ?? 10);
/** Events written by one INSERT (one transaction). */
const SEED_CHUNK = 1_000_000;
const DAY_MS = 86_400_000;
const FIRST_PREVIEW_GOAL_MS = 2000;
const PREVIEW_GOAL_MS = 250;

const ms = (value: number) => `${value.toFixed(1)} ms`;
const seconds = (value: number) => `${(value / 1000).toFixed(1)} s`;

/**
 * What a store sends, per thousand events (cumulative bounds): the event types the seeded events
 * take, all registered in the catalog (prepareDataDir registers the first four).
 */
const EVENT_MIX: [name: string, upTo: number][] = [
  ['product_viewed', 400],
  ['page_viewed', 700],
  ['order_completed', 780],
  ['cart_updated', 850],
  ['products_searched', 910],
  ['checkout_started', 950],
  ['email_opened', 970],
  ['signed_up', 980],
  ['newsletter_subscribed', 990],
  ['order_refunded', 1000],
];

/**
 * Rules a marketer writes with behaviours (docs/decisions.md, "Behaviour in a rule"): counts with
 * and without a window, through a `where`, a sum through a `where`, a latest value, and
 * combinations; eleven distinct behaviours, none held by a segment until the segments are created.
 */
export const BEHAVIOUR_RULES: { name: string; predicate: unknown }[] = [
  {
    name: 'orders ≥ 3',
    predicate: { event: 'order_completed', op: 'gte', value: 3 },
  },
  {
    name: 'orders in 30 d ≥ 2',
    predicate: { event: 'order_completed', op: 'gte', value: 2, within_days: 30 },
  },
  {
    name: 'orders over 100 in 90 d ≥ 1',
    predicate: {
      event: 'order_completed',
      op: 'gte',
      value: 1,
      within_days: 90,
      where: { path: 'properties.total', op: 'gt', value: 100 },
    },
  },
  {
    name: 'orders with a coupon ≥ 2',
    predicate: {
      event: 'order_completed',
      op: 'gte',
      value: 2,
      where: { path: 'properties.coupon', op: 'exists', value: true },
    },
  },
  {
    name: 'EUR order total in 365 d ≥ 300',
    predicate: {
      event: 'order_completed',
      sum: 'properties.total',
      op: 'gte',
      value: 300,
      within_days: 365,
      where: { path: 'properties.currency', op: 'eq', value: 'EUR' },
    },
  },
  {
    name: 'latest viewed category = shoes',
    predicate: {
      event: 'product_viewed',
      latest: 'properties.category',
      op: 'eq',
      value: 'shoes',
    },
  },
  {
    name: 'bags viewed in 30 d ≥ 2',
    predicate: {
      event: 'product_viewed',
      op: 'gte',
      value: 2,
      within_days: 30,
      where: { path: 'properties.category', op: 'eq', value: 'bags' },
    },
  },
  {
    name: 'page views in 7 d ≥ 2',
    predicate: { event: 'page_viewed', op: 'gte', value: 2, within_days: 7 },
  },
  {
    name: '≥ 2 orders in 30 d and viewed a product',
    predicate: {
      all: [
        { event: 'order_completed', op: 'gte', value: 2, within_days: 30 },
        { event: 'product_viewed', op: 'gte', value: 1 },
      ],
    },
  },
  {
    name: 'cart in 7 d and no order in 7 d',
    predicate: {
      all: [
        { event: 'cart_updated', op: 'gte', value: 1, within_days: 7 },
        { not: { event: 'order_completed', op: 'gte', value: 1, within_days: 7 } },
      ],
    },
  },
];

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * A multiplier that spreads ranks over all `profiles` ids: about the golden ratio of the count
 * (neighbouring ranks land far apart) and prime to it (a bijection mod `profiles`).
 */
function spreadOf(profiles: number): number {
  let multiplier = Math.max(1, Math.round(profiles * 0.6180339887));
  while (gcd(multiplier, profiles) !== 1) multiplier += 1;
  return multiplier;
}

/**
 * `events` events of the types of EVENT_MIX in the bench workspace, written straight into the
 * `events` table as ingest writes them (seeding ten million through ingest would time ingest, not
 * previews), in the order of their time as ingest appends them, spread over the last 365 days
 * before now. Uneven over the `profiles` of seedProfiles: 70% of the events go to 30% of the
 * profiles, heavier the lower their rank (up to thousands each), the rest evenly over all of
 * them (a few each, some none); ranks are spread over the ids, so the profiles a preview scans
 * first are a sample. Then 2% of the profiles are merged into a live one, their values dropped
 * as a merge does, their events left under them as ingest leaves them.
 */
export async function seedEvents(
  context: Context,
  profiles: number,
  events: number,
): Promise<void> {
  for (const [name] of EVENT_MIX) {
    if (name === 'order_completed')
      await putEventType(context, TENANT, name, {
        dedupEntity: 'order',
        dedupKeyPaths: ['properties.order_id'],
      });
    else await putEventType(context, TENANT, name, null);
  }
  const nameCase = `CASE ${EVENT_MIX.map(([name, upTo]) => `WHEN roll < ${upTo} THEN '${name}'`).join(' ')} END`;
  const spanMs = 365 * DAY_MS;
  const jitterMs = 10 * 60_000;
  const start = new Date(Date.now() - spanMs).toISOString();
  for (let from = 0; from < events; from += SEED_CHUNK) {
    await context.store.write((session) =>
      session.runText(
        `INSERT INTO events (tenant_id, workspace_id, event_id, event_name, dedup_key, dedup_hash, profile_id,
           source, occured_at, received_at, properties, identifier_keys, ingested_at)
         SELECT $tenant, $workspace, event_id, event_name, dedup_key,
           md5_number($tenant || '/' || $workspace || '/' || event_name || '/' || dedup_key),
           'p_' || lpad(to_hex(profile), 24, '0'),
           CASE WHEN event_name IN ('order_completed', 'order_refunded', 'signed_up') OR h1 % 10 < 3
             THEN 'server' ELSE 'browser' END,
           occured_at, occured_at + to_milliseconds((h1 % 3000)::BIGINT),
           CASE event_name
             WHEN 'order_completed' THEN CASE WHEN h3 % 5 = 0
               THEN json_object('order_id', 'o_' || event_id[3:], 'total', amount, 'currency', currency,
                 'coupon', 'SAVE' || (5 + 5 * (h4 % 4))::VARCHAR)
               ELSE json_object('order_id', 'o_' || event_id[3:], 'total', amount, 'currency', currency) END
             WHEN 'product_viewed' THEN json_object('sku', sku, 'category', category, 'price', round(5 + 295 * u2, 2))
             WHEN 'page_viewed' THEN json_object('path', ['/', '/sale', '/new', '/blog', '/help', '/account', '/cart', '/search'][1 + (h3 % 8)::BIGINT],
               'referrer', ['google', 'direct', 'newsletter', 'instagram'][1 + (h4 % 4)::BIGINT])
             WHEN 'cart_updated' THEN json_object('sku', sku, 'category', category, 'quantity', 1 + (h3 % 3)::BIGINT)
             WHEN 'products_searched' THEN json_object('query', 'q' || (h3 % 2000)::VARCHAR, 'results', (h4 % 60)::BIGINT)
             WHEN 'checkout_started' THEN json_object('cart_total', amount, 'currency', currency)
             WHEN 'email_opened' THEN json_object('campaign_id', 'c_' || (h3 % 40)::VARCHAR)
             WHEN 'signed_up' THEN json_object('method', ['email', 'google', 'apple'][1 + (h3 % 3)::BIGINT])
             WHEN 'newsletter_subscribed' THEN json_object('list', ['weekly', 'offers'][1 + (h3 % 2)::BIGINT])
             ELSE json_object('order_id', 'o_' || lpad(to_hex(h4 % $events::BIGINT), 24, '0'), 'amount', amount)
           END,
           [md5('cookie:' || profile::VARCHAR)],
           occured_at + to_milliseconds((3000 + h1 % 5000)::BIGINT)
         FROM (
           SELECT *,
             CASE event_name WHEN 'order_completed' THEN 'order:' || to_json(['o_' || event_id[3:]])::VARCHAR
               ELSE 'id:' || event_id END AS dedup_key
           FROM (
             SELECT i, h1, h3, h4, u2, 'e_' || lpad(to_hex(i), 24, '0') AS event_id, ${nameCase} AS event_name,
               (((CASE WHEN h2 % 10 < 7 THEN floor(0.3 * $profiles::BIGINT * u1 * u1) ELSE floor($profiles::BIGINT * u1) END)::HUGEINT
                 * $spread::BIGINT) % $profiles::BIGINT)::BIGINT AS profile,
               $start::TIMESTAMP + to_milliseconds((i * $step_ms::DOUBLE)::BIGINT + (h2 % $jitter_ms::BIGINT)::BIGINT) AS occured_at,
               round(5 + 495 * u2 * u2, 2) AS amount,
               ['EUR', 'USD', 'GBP'][1 + (h4 % 3)::BIGINT] AS currency,
               'sku_' || lpad((h3 % 5000)::VARCHAR, 5, '0') AS sku,
               list_extract(CAST($categories AS JSON)::VARCHAR[], 1 + floor(8 * pow(u2, 1.5))::BIGINT) AS category
             FROM (
               SELECT i, hash(i, 101) AS h1, hash(i, 102) AS h2, hash(i, 103) AS h3, hash(i, 104) AS h4,
                 (hash(i, 105) % 1000000007)::DOUBLE / 1000000007 AS u1,
                 (hash(i, 106) % 1000000007)::DOUBLE / 1000000007 AS u2,
                 (hash(i, 107) % 1000)::BIGINT AS roll
               FROM range($from::BIGINT, $to::BIGINT) t(i)
             )
           )
         )`,
        {
          tenant: TENANT,
          workspace: WORKSPACE,
          profiles,
          events,
          spread: spreadOf(profiles),
          start,
          step_ms: (spanMs - jitterMs) / events,
          jitter_ms: jitterMs,
          categories: JSON.stringify(CATEGORIES),
          from,
          to: Math.min(events, from + SEED_CHUNK),
        },
      ),
    );
  }
  // One profile in 50 merged into one of the 48 before it (never merged itself); a merged
  // profile has no row of values and leaves the segments it was in.
  await context.store.write(async (session) => {
    const params = { tenant: TENANT, workspace: WORKSPACE };
    await session.runText(
      `CREATE TEMP TABLE bench_merges AS
       SELECT 'p_' || lpad(to_hex(i), 24, '0') AS merged,
         'p_' || lpad(to_hex(i - 1 - (hash(i, 108) % 48)::BIGINT), 24, '0') AS survivor
       FROM range($profiles::BIGINT) t(i) WHERE i % 50 = 49`,
      { profiles },
    );
    await session.runText(
      `UPDATE profiles p SET merged_into = m.survivor FROM bench_merges m
       WHERE p.tenant_id = $tenant AND p.workspace_id = $workspace AND p.profile_id = m.merged`,
      params,
    );
    await session.runText(
      `INSERT INTO profile_merge_records
       SELECT $tenant, $workspace, merged, survivor, 'e_merge_' || merged, now()::TIMESTAMP FROM bench_merges`,
      params,
    );
    for (const table of ['profile_metric_vectors', 'segment_members'])
      await session.runText(
        `DELETE FROM ${table} WHERE tenant_id = $tenant AND workspace_id = $workspace
           AND profile_id IN (SELECT merged FROM bench_merges)`,
        params,
      );
    await session.runText('DROP TABLE bench_merges');
  });
}

interface Server {
  url: string;
  headers: Record<string, string>;
}

/** One preview as the console's builder asks for it; its round trip and its counts. */
async function preview(
  server: Server,
  predicate: unknown,
): Promise<{ ms: number; matched: number; scanned: number }> {
  const started = performance.now();
  const response = await fetch(`${server.url}/v1/tenants/${TENANT}/segments/preview`, {
    method: 'POST',
    headers: server.headers,
    body: JSON.stringify({ workspace_id: WORKSPACE, predicate }),
  });
  const body = (await response.json()) as { matched_profiles: number; scanned_profiles: number };
  const elapsed = performance.now() - started;
  if (!response.ok) throw new Error(`preview answered ${response.status}: ${JSON.stringify(body)}`);
  return { ms: elapsed, matched: body.matched_profiles, scanned: body.scanned_profiles };
}

/**
 * `cds serve` on the data dir, once ready (its ingest indexes read from the 10M events), and
 * warmed as a running server is: a few previews of the catalog metrics' rules.
 */
async function withServer(
  dir: string,
  tenantToken: string,
  use: (server: Server) => Promise<void>,
): Promise<void> {
  const { child, url } = await startChild(
    [process.execPath, CDS_BIN, 'serve', '-d', dir, '--port', '0', '--quiet'],
    /cds listening on (http:\/\/[^\s"]+)/,
  );
  try {
    while ((await fetch(`${url}/readyz`)).status !== 200)
      await new Promise((resolve) => setTimeout(resolve, 250));
    const server = {
      url,
      headers: { authorization: `Bearer ${tenantToken}`, 'content-type': 'application/json' },
    };
    for (const predicate of segmentPredicates().slice(0, 5)) await preview(server, predicate);
    await use(server);
  } finally {
    await stopChild(child);
  }
}

/**
 * The console's behaviour numbers (issue 38, item 1) at `profiles` profiles and `events` stored
 * events, on the console bench's data dir: the first preview of each of BEHAVIOUR_RULES, computed
 * from the stored events; the backfill of their metrics once a segment holds each; then the
 * previews of the same rules, read from the metrics, over several rounds.
 */
export async function benchBehaviourPreviews(options: {
  dir: string;
  tenantToken: string;
  profiles: number;
  events: number;
}): Promise<void> {
  const { dir, tenantToken, profiles, events } = options;
  console.log(
    `\nconsole, behaviours in a rule: ${profiles.toLocaleString('en')} profiles, ${events.toLocaleString('en')} stored events, ${BEHAVIOUR_RULES.length} rules`,
  );
  let context = await openBenchContext(dir);
  const seeding = performance.now();
  await seedEvents(context, profiles, events);
  const seedMs = performance.now() - seeding;
  const [stored] = await context.store.read((session) =>
    session.allText<{ events: number; merged: number }>(
      `SELECT (SELECT count(*) FROM events) AS events,
         (SELECT count(*) FROM profiles WHERE merged_into IS NOT NULL) AS merged`,
    ),
  );
  await context.store.close();
  console.log(
    `  seeded ${stored?.events.toLocaleString('en')} events (${EVENT_MIX.length} types) and ${stored?.merged.toLocaleString('en')} merged profiles in ${seconds(seedMs)} (${rate(events, seedMs / 1000)})`,
  );

  // (a) Each rule's first preview: no segment holds its behaviours, so they come from events.
  const first: { name: string; ms: number; matched: number; scanned: number }[] = [];
  const again: number[] = [];
  await withServer(dir, tenantToken, async (server) => {
    for (const rule of BEHAVIOUR_RULES)
      first.push({ name: rule.name, ...(await preview(server, rule.predicate)) });
    for (const rule of BEHAVIOUR_RULES) again.push((await preview(server, rule.predicate)).ms);
  });
  const firstMs = first.map((row) => row.ms);
  const over = first.filter((row) => row.ms > FIRST_PREVIEW_GOAL_MS);
  console.log(
    `  first preview of a new behaviour over HTTP, from the stored events (${first.length} rules): p50 ${ms(percentile(firstMs, 50))}, p95 ${ms(percentile(firstMs, 95))}, max ${ms(Math.max(...firstMs))}   goal each ≤ 2 s${over.length > 0 ? ` (${over.length} over)` : ''}`,
  );
  console.log(
    `    by rule: ${first.map((row) => `${row.name} ${ms(row.ms)} (${row.matched.toLocaleString('en')}/${row.scanned.toLocaleString('en')})`).join('; ')}`,
  );
  console.log(
    `    the same previews again, still from events: p50 ${ms(percentile(again, 50))}, max ${ms(Math.max(...again))}`,
  );

  // (b) A segment per rule; the upkeep backfills their behaviours' metrics and evaluates them.
  context = await openBenchContext(dir);
  for (const [index, rule] of BEHAVIOUR_RULES.entries())
    await createSegment(
      context,
      { tenantId: TENANT, workspaceId: WORKSPACE, segmentId: `b${String(index).padStart(2, '0')}` },
      {
        display_name: rule.name,
        predicate: rule.predicate,
        status: 'active',
        automations: DEFAULT_AUTOMATIONS,
      },
    );
  const [behaviours] = await context.store.read((session) =>
    session.allText<{ n: number }>(
      'SELECT count(DISTINCT metric_name) AS n FROM segment_behaviours WHERE tenant_id = $tenant',
      { tenant: TENANT },
    ),
  );
  // As runUpkeep does it, in two timed parts: the backfill (with the evaluation of the profiles
  // it touched, in its transaction), then the first evaluation of the segments waiting for it.
  const time = metricTime(new Date().toISOString());
  const backfilling = performance.now();
  if (await context.store.read(hasPendingBackfill))
    await context.store.write(async (session) => {
      const touched = await backfillDefinitions(session, time);
      await evaluateAfterMetricStep(context, touched, time);
    });
  const backfillMs = performance.now() - backfilling;
  const evaluating = performance.now();
  await context.store.write((session) =>
    evaluateAwaitingSegments(session, { now: time.now, announce: false }),
  );
  const evaluationMs = performance.now() - evaluating;
  // The rest of the loop's upkeep (decay, the compaction of the inputs the backfill appended), so
  // that the server previews without it running beside.
  const upkeeping = performance.now();
  let passes = 0;
  for (; passes < 50; passes++) {
    const due = await context.store.read(
      async (session) =>
        (await hasPendingBackfill(session)) ||
        (await hasAwaitingSegments(session)) ||
        (await inputsNeedCompaction(session)),
    );
    if (!due && passes > 0) break;
    await runUpkeep(context);
  }
  const upkeepMs = performance.now() - upkeeping;
  const members = await context.store.read((session) =>
    session.allText<{ segment_id: string; evaluated: boolean; members: number; live: number }>(
      `SELECT s.segment_id, s.evaluated_at IS NOT NULL AS evaluated,
         (SELECT count(*) FROM profiles p WHERE p.tenant_id = s.tenant_id
            AND p.workspace_id = s.workspace_id AND p.merged_into IS NULL) AS live,
         (SELECT count(*) FROM segment_members m WHERE m.tenant_id = s.tenant_id
            AND m.workspace_id = s.workspace_id AND m.segment_id = s.segment_id) AS members
       FROM segments s WHERE s.tenant_id = $tenant AND s.segment_id LIKE 'b%' ORDER BY s.segment_id`,
      { tenant: TENANT },
    ),
  );
  await context.store.close();
  console.log(
    `  backfill of the ${behaviours?.n} behaviour metrics over ${events.toLocaleString('en')} events (with the evaluation of the profiles it touched): ${seconds(backfillMs)}; first evaluation of the ${BEHAVIOUR_RULES.length} segments: ${seconds(evaluationMs)}; rest of the upkeep: ${seconds(upkeepMs)} (${passes} ${passes === 1 ? 'pass' : 'passes'})`,
  );
  const waiting = members.filter((row) => !row.evaluated).map((row) => row.segment_id);
  console.log(
    `    members: ${members.map((row) => `${row.segment_id} ${row.members.toLocaleString('en')}`).join(', ')}${waiting.length > 0 ? `; NOT EVALUATED: ${waiting.join(', ')}` : ''}`,
  );

  // The same previews once their segments exist: read from profile_metric_vectors.
  const timings: number[] = [];
  const shares: number[] = [];
  await withServer(dir, tenantToken, async (server) => {
    for (let round = 0; round < ROUNDS; round++)
      for (const rule of BEHAVIOUR_RULES) {
        const answer = await preview(server, rule.predicate);
        timings.push(answer.ms);
        if (round === 0) shares.push(answer.matched / answer.scanned);
      }
  });
  const p95 = percentile(timings, 95);
  console.log(
    `  preview of the same rules over HTTP once their segments exist (${timings.length} calls, ${ROUNDS} rounds): p50 ${ms(percentile(timings, 50))}, p95 ${ms(p95)}   goal p95 ≤ ${PREVIEW_GOAL_MS} ms (p95 / goal ${(p95 / PREVIEW_GOAL_MS).toFixed(2)})`,
  );
  // A preview counts the profiles it scans (at most 20,000): the same rule should match about the
  // same share of them whether its behaviours come from events or from their metrics, and about
  // the share of all live profiles its segment holds.
  const percent = (share: number) => `${(100 * share).toFixed(1)}%`;
  const compared = BEHAVIOUR_RULES.map((rule, index) => {
    const before = first[index];
    const row = members[index];
    return {
      name: rule.name,
      first: before ? before.matched / before.scanned : Number.NaN,
      later: shares[index] ?? Number.NaN,
      members: row ? row.members / row.live : Number.NaN,
    };
  });
  const apart = compared.filter((row) => Math.abs(row.first - row.later) > 0.02);
  console.log(
    `    share of the scanned profiles matched, first preview → once the segment exists (segment members / live profiles): ${compared.map((row) => `${row.name} ${percent(row.first)} → ${percent(row.later)} (${percent(row.members)})`).join('; ')}${apart.length > 0 ? `; ${apart.length} rules apart by over 2 points` : ''}`,
  );
}
