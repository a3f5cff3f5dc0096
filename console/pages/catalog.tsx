import { useSignal } from '@preact/signals';
import { EventTypes } from './catalog/event-types.js';
import { MetricDefinitions } from './catalog/metric-definitions.js';
import { currentScope } from './scope.js';

/** Event types and metric definitions of the tenant, seen from the chosen workspace. */
export function Catalog() {
  const eventNames = useSignal<string[]>([]);
  const scope = currentScope();
  return (
    <section aria-labelledby="catalog-title">
      <h1 id="catalog-title">Catalog</h1>
      {scope ? (
        // Keyed by scope: switching workspace loads the lists afresh.
        <div key={`${scope.tenant}\u0000${scope.workspace}`} class="stack">
          <EventTypes
            tenant={scope.tenant}
            workspace={scope.workspace}
            onChange={(types) => {
              eventNames.value = types.map((type) => type.event_name);
            }}
          />
          <MetricDefinitions
            tenant={scope.tenant}
            workspace={scope.workspace}
            eventNames={eventNames.value}
          />
        </div>
      ) : (
        <p>Choose a workspace.</p>
      )}
    </section>
  );
}
