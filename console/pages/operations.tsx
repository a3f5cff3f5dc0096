import { IngestStatus } from './operations/ingest-status.js';
import { Quarantine } from './operations/quarantine.js';
import { Erasures, Rejections } from './operations/tenant-logs.js';
import { FailedWebhooks } from './operations/webhooks.js';
import { currentScope } from './scope.js';

/** For the operator token: is ingest keeping up, and what is stuck or set aside. */
export function Operations() {
  const scope = currentScope();
  return (
    <section aria-labelledby="operations-title" class="stack">
      <h1 id="operations-title">Operations</h1>
      <IngestStatus />
      <Quarantine />
      <FailedWebhooks />
      {scope && (
        <div key={`${scope.tenant}\u0000${scope.workspace}`} class="stack">
          <Rejections tenant={scope.tenant} workspace={scope.workspace} />
          <Erasures tenant={scope.tenant} />
        </div>
      )}
    </section>
  );
}
