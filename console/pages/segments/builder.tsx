import { useComputed, useSignal, useSignalEffect } from '@preact/signals';
import { ApiError, api, pathOf } from '../../api.js';
import { Options } from '../../components/field.js';
import { navigate } from '../../router.js';
import { canWrite, session } from '../../session.js';
import {
  eventTypeNames,
  SEGMENT_STATUSES,
  type SegmentStatus,
  startingPredicate,
  type WorkspaceMetric,
  workspaceMetrics,
} from './data.js';
import {
  type BuiltPredicate,
  buildPredicate,
  newGroup,
  type RuleNode,
  ruleFromPredicate,
} from './rule.js';
import { RuleEditor } from './rule-editor.js';

/** Waits this long after the last change before asking for a preview (the rule is still being typed). */
const PREVIEW_DEBOUNCE_MS = 300;

/** A matching person of the preview's sample, masked as the member list masks them. */
interface SamplePerson {
  profile_id: string;
  email: string | null;
  phone: string | null;
}

interface Preview {
  matched_profiles: number;
  scanned_profiles: number;
  truncated: boolean;
  workspace_profiles: number;
  workspace_identified_profiles: number;
  sample: SamplePerson[];
}

/** How many matching people the preview shows beside its counts. */
const PREVIEW_SAMPLE_SIZE = 10;

type PreviewState =
  | { kind: 'incomplete' }
  | { kind: 'loading'; last: Preview | null }
  | { kind: 'done'; preview: Preview }
  | { kind: 'failed'; message: string };

/** The matches the scanned sample implies for the whole workspace, rounded. */
function estimatedMatches(preview: Preview): number {
  if (preview.scanned_profiles === 0) return 0;
  return Math.round(
    (preview.matched_profiles / preview.scanned_profiles) * preview.workspace_profiles,
  );
}

/** The API's reasons (paths like `predicate.any[0].value`) by the rule node they name. */
function nodeReasons(error: unknown, built: BuiltPredicate | null): Map<number, string> {
  const reasons = new Map<number, string>();
  if (!(error instanceof ApiError) || !built) return reasons;
  for (const [path, message] of error.fieldReasons()) {
    const id = built.paths.get(path);
    if (id !== undefined) reasons.set(id, message);
  }
  return reasons;
}

function PreviewPanel({ state, emptyRule }: { state: PreviewState; emptyRule: boolean }) {
  const shown =
    state.kind === 'done' ? state.preview : state.kind === 'loading' ? state.last : null;
  return (
    <section
      class="preview"
      aria-labelledby="preview-title"
      aria-live="polite"
      aria-busy={state.kind === 'loading'}
    >
      <h2 id="preview-title">Preview</h2>
      {state.kind === 'incomplete' && (
        <p class="help">
          {emptyRule
            ? 'Add a condition to see who matches.'
            : 'Complete every condition to see who matches.'}
        </p>
      )}
      {state.kind === 'failed' && <p class="error">{state.message}</p>}
      {shown && (
        <dl class="facts">
          <dt>Matching profiles</dt>
          <dd data-testid="preview-count">{shown.matched_profiles}</dd>
          <dt>Profiles scanned</dt>
          <dd>
            {shown.scanned_profiles}
            {shown.truncated && (
              <strong class="warning">
                {' '}
                Not every profile was scanned: the count is exact over {shown.scanned_profiles} of{' '}
                {shown.workspace_profiles}, a sample chosen by id, so about{' '}
                {estimatedMatches(shown)} would match; the saved segment counts them all.
              </strong>
            )}
          </dd>
          <dt>Profiles in the workspace</dt>
          <dd>{shown.workspace_profiles}</dd>
          <dt>Identified profiles</dt>
          <dd>{shown.workspace_identified_profiles}</dd>
        </dl>
      )}
      {shown && shown.sample.length > 0 && (
        <>
          <h3 id="preview-sample-title">Some of the people who match</h3>
          <ul class="sample" aria-labelledby="preview-sample-title">
            {shown.sample.map((person) => (
              <li key={person.profile_id}>
                <a href={`#/profiles/${encodeURIComponent(person.profile_id)}`}>
                  {person.email ?? person.phone ?? person.profile_id}
                </a>
                {person.email && person.phone ? ` (${person.phone})` : ''}
              </li>
            ))}
          </ul>
        </>
      )}
      {state.kind === 'loading' && <p class="help">Counting…</p>}
    </section>
  );
}

/** The segment's webhooks, as the save's `automations` names them, and what each one sends. */
const AUTOMATIONS = [
  ['on_enter', 'when a profile enters'],
  ['on_exit', 'when a profile leaves'],
  ['on_backfill', 'for the profiles already matching when it becomes active'],
] as const;

/**
 * A new segment, for a token that may write. A read-only token is told so and nothing is asked of
 * the API: the preview, like the save, takes a tenant or operator token (docs/decisions.md "Which
 * token reads what"), so the builder's requests would only be refused.
 */
export function SegmentBuilder() {
  if (!canWrite.value)
    return (
      <section>
        <h1>New segment</h1>
        <p>This token is read-only: it cannot create segments.</p>
      </section>
    );
  return <SegmentForm />;
}

/**
 * A new segment: its rule, the exact preview as the rule changes, and the save. The API's segments
 * are create-only (a definition is never rewritten under the members it already has), so there is
 * no editing of a saved one here.
 */
function SegmentForm() {
  const tenant = session.tenant.value;
  const workspace = session.workspace.value;
  const metrics = useSignal<WorkspaceMetric[] | null>(null);
  const events = useSignal<string[]>([]);
  /** The consent categories the workspace names, which a segment's webhooks may need. */
  const consentCategories = useSignal<string[]>([]);
  const loadError = useSignal<string | null>(null);
  const root = useSignal<RuleNode>(newGroup('all'));
  const preview = useSignal<PreviewState>({ kind: 'incomplete' });
  const previewError = useSignal<unknown>(null);
  const saveError = useSignal<ApiError | null>(null);
  const saving = useSignal(false);
  const form = useSignal({
    segment_id: '',
    display_name: '',
    status: 'active' as SegmentStatus,
    on_enter: true,
    on_exit: true,
    on_backfill: false,
    required_consent: [] as string[],
  });

  useSignalEffect(() => {
    const t = session.tenant.value;
    const w = session.workspace.value;
    if (!t || !w) return;
    metrics.value = null;
    Promise.all([
      workspaceMetrics(t, w),
      eventTypeNames(t),
      api<{ consent_categories: string[] }>('GET', pathOf`/v1/tenants/${t}/workspaces/${w}`),
    ]).then(
      ([list, names, workspaceAnswer]) => {
        events.value = names;
        consentCategories.value = workspaceAnswer.consent_categories;
        metrics.value = list;
        const started = ruleFromPredicate(startingPredicate.peek());
        startingPredicate.value = null;
        if (started) root.value = started.type === 'group' ? started : newGroup('all', [started]);
      },
      (error: Error) => {
        loadError.value = error.message;
      },
    );
  });

  const shapes = useComputed(
    () => new Map((metrics.value ?? []).map((metric) => [metric.name, metric.shape])),
  );
  const built = useComputed(() => buildPredicate(root.value, shapes.value));

  // Debounced preview; an answer to a rule since changed is dropped, so the count shown is always
  // the current rule's.
  useSignalEffect(() => {
    const current = built.value;
    const t = session.tenant.value;
    const w = session.workspace.value;
    previewError.value = null;
    if (!current || !t || !w) {
      preview.value = { kind: 'incomplete' };
      return;
    }
    const last = preview.peek();
    preview.value = {
      kind: 'loading',
      last: last.kind === 'done' ? last.preview : last.kind === 'loading' ? last.last : null,
    };
    let cancelled = false;
    const timer = setTimeout(() => {
      api<Preview>('POST', pathOf`/v1/tenants/${t}/segments/preview`, {
        workspace_id: w,
        predicate: current.predicate,
        sample_size: PREVIEW_SAMPLE_SIZE,
      }).then(
        (answer) => {
          if (!cancelled) preview.value = { kind: 'done', preview: answer };
        },
        (error: Error) => {
          if (cancelled) return;
          previewError.value = error;
          preview.value = { kind: 'failed', message: error.message };
        },
      );
    }, PREVIEW_DEBOUNCE_MS);
    return () => {
      cancelled = true;
      clearTimeout(timer);
    };
  });

  const reasons = useComputed(() => {
    const merged = nodeReasons(previewError.value, built.value);
    for (const [id, reason] of nodeReasons(saveError.value, built.value)) merged.set(id, reason);
    return merged;
  });

  if (!tenant || !workspace) return <p class="loading">Choose a workspace.</p>;
  if (loadError.value)
    return <p class="error">The metrics and events could not be loaded: {loadError.value}</p>;
  if (!metrics.value) return <p class="loading">Loading the workspace's metrics and events…</p>;

  const fields = form.value;
  const fieldReasons = saveError.value?.fieldReasons() ?? new Map<string, string>();
  const idReason =
    fieldReasons.get('segment_id') ??
    (saveError.value?.status === 409 ? saveError.value.message : undefined);
  const set = (patch: Partial<typeof fields>) => {
    form.value = { ...form.value, ...patch };
  };

  const save = async (event: Event) => {
    event.preventDefault();
    const current = built.value;
    if (!current) return;
    saving.value = true;
    saveError.value = null;
    try {
      await api('PUT', pathOf`/v1/tenants/${tenant}/segments/${fields.segment_id}`, {
        workspace_id: workspace,
        display_name: fields.display_name,
        predicate: current.predicate,
        status: fields.status,
        automations: {
          on_enter: fields.on_enter,
          on_exit: fields.on_exit,
          on_backfill: fields.on_backfill,
        },
        required_consent: fields.required_consent,
      });
      navigate(`/segments/${fields.segment_id}`);
    } catch (error) {
      saveError.value =
        error instanceof ApiError ? error : new ApiError(0, 'network', String(error), null);
    } finally {
      saving.value = false;
    }
  };

  const otherReason =
    saveError.value &&
    !idReason &&
    !fieldReasons.has('display_name') &&
    !fieldReasons.has('status') &&
    !fieldReasons.has('workspace_id') &&
    reasons.value.size === 0
      ? saveError.value.message
      : null;

  return (
    <section aria-labelledby="builder-title">
      <h1 id="builder-title">New segment in {workspace}</h1>
      {metrics.value.length === 0 && events.value.length === 0 ? (
        <p>
          No event types yet: register the events your sites send in the catalog, then build a rule
          on what people did.
        </p>
      ) : (
        <div class="builder">
          <RuleEditor
            root={root}
            metrics={metrics.value}
            events={events.value}
            reasons={reasons.value}
          />
          <PreviewPanel
            state={preview.value}
            emptyRule={root.value.type === 'group' && root.value.children.length === 0}
          />
        </div>
      )}
      <form class="segment-form" onSubmit={save}>
        <h2>Save</h2>
        <label for="segment-id">Id</label>
        <input
          id="segment-id"
          required
          pattern="[a-z0-9][a-z0-9_\-]{0,63}"
          aria-describedby="segment-id-help"
          aria-invalid={idReason ? true : undefined}
          value={fields.segment_id}
          onInput={(event) => set({ segment_id: (event.target as HTMLInputElement).value })}
        />
        <p id="segment-id-help" class="help">
          Lowercase letters, digits, - and _; it names the segment in webhooks and cannot change.
        </p>
        {idReason && <p class="error field-reason">{idReason}</p>}
        <label for="segment-name">Display name</label>
        <input
          id="segment-name"
          required
          maxLength={200}
          value={fields.display_name}
          onInput={(event) => set({ display_name: (event.target as HTMLInputElement).value })}
        />
        {fieldReasons.get('display_name') && (
          <p class="error field-reason">{fieldReasons.get('display_name')}</p>
        )}
        <label for="segment-status">Status</label>
        <select
          id="segment-status"
          value={fields.status}
          onChange={(event) =>
            set({ status: (event.target as HTMLSelectElement).value as SegmentStatus })
          }
        >
          <Options values={SEGMENT_STATUSES} />
        </select>
        <fieldset>
          <legend>Webhooks</legend>
          {AUTOMATIONS.map(([key, label]) => (
            <label key={key} class="inline">
              <input
                type="checkbox"
                checked={fields[key]}
                onChange={(event) => set({ [key]: (event.target as HTMLInputElement).checked })}
              />
              {label}
            </label>
          ))}
        </fieldset>
        {consentCategories.value.length > 0 && (
          <fieldset>
            <legend>Webhooks need consent to</legend>
            {consentCategories.value.map((category) => (
              <label key={category} class="inline">
                <input
                  type="checkbox"
                  checked={fields.required_consent.includes(category)}
                  onChange={(event) => {
                    const others = fields.required_consent.filter((c) => c !== category);
                    set({
                      required_consent: (event.target as HTMLInputElement).checked
                        ? [...others, category]
                        : others,
                    });
                  }}
                />
                {category}
              </label>
            ))}
            <p class="help">
              A member whose consent lacks one still counts; their deliveries are withheld.
            </p>
          </fieldset>
        )}
        <button type="submit" disabled={saving.value || !built.value}>
          Save segment
        </button>
        {!built.value && <p class="help">Complete the rule to save it.</p>}
        {otherReason && (
          <p role="alert" class="error">
            {otherReason}
          </p>
        )}
      </form>
    </section>
  );
}
