import type { Retry } from '../hooks/use-retry.js';

/** "Retry every …" under a list that has something to retry, and the last retry's outcome. */
export function RetryEvery(props: { retry: Retry; label: string; shown: boolean }) {
  return (
    <>
      {props.shown && (
        <div class="actions">
          <button type="button" onClick={() => props.retry.retry(null)}>
            {props.label}
          </button>
        </div>
      )}
      <p role="status" class="help">
        {props.retry.outcome.value ?? ''}
      </p>
    </>
  );
}
