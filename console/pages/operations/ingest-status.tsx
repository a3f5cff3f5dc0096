import { Section, useLoaded } from './loaded.js';

interface Readiness {
  ingest: {
    backlog_files: number;
    lag_seconds: number;
    failing: boolean;
    backlog_bytes?: number;
    events_ingested?: number;
    rejected?: number;
    quarantined_files?: number;
    last_batch_at?: string | null;
    error?: string | null;
    error_since?: string | null;
  };
}

/** The ingest backlog and lag, from `/readyz` (the operator's detailed answer). */
export function IngestStatus() {
  const { data, failure, reload } = useLoaded<Readiness>('/readyz');
  const ingest = data.value?.ingest;
  return (
    <Section id="ingest-title" title="Ingest" failure={failure.value}>
      {ingest && (
        <dl class="facts">
          <dt>Backlog</dt>
          <dd>
            {ingest.backlog_files} files
            {ingest.backlog_bytes !== undefined ? `, ${ingest.backlog_bytes} bytes` : ''}
          </dd>
          <dt>Lag</dt>
          <dd>{ingest.lag_seconds} s</dd>
          <dt>State</dt>
          <dd class={ingest.failing ? 'error' : 'ok'}>
            {ingest.failing
              ? `failing since ${ingest.error_since ?? '?'}: ${ingest.error ?? ''}`
              : 'keeping up'}
          </dd>
          {ingest.last_batch_at !== undefined && (
            <>
              <dt>Last batch</dt>
              <dd>{ingest.last_batch_at ?? 'none yet'}</dd>
            </>
          )}
          {ingest.events_ingested !== undefined && (
            <>
              <dt>Events ingested</dt>
              <dd>{ingest.events_ingested}</dd>
            </>
          )}
          {ingest.rejected !== undefined && (
            <>
              <dt>Rejected</dt>
              <dd>{ingest.rejected}</dd>
            </>
          )}
        </dl>
      )}
      <div class="actions">
        <button type="button" class="quiet" onClick={reload}>
          Refresh ingest status
        </button>
      </div>
    </Section>
  );
}
