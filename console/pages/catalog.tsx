import { useSignal, useSignalEffect } from '@preact/signals';
import { pathOf } from '../api.js';
import { everyPage } from '../paging.js';
import { type EventType, EventTypes } from './catalog/event-types.js';
import { MetricDefinitions } from './catalog/metric-definitions.js';
import { currentScope } from './scope.js';

/** Event types and metric definitions of the tenant, seen from the chosen workspace. */
export function Catalog() {
  const eventNames = useSignal<string[]>([]);
  const typesChanged = useSignal(0);
  const scope = currentScope();

  // Every event type, not only the page the list shows: a metric may read any of them.
  useSignalEffect(() => {
    typesChanged.value;
    const tenant = currentScope()?.tenant;
    if (!tenant) return;
    let stale = false;
    everyPage<EventType>(pathOf`/v1/tenants/${tenant}/event-types`, 'event_types').then(
      (types) => {
        if (!stale) eventNames.value = types.map((type) => type.event_name);
      },
      () => undefined,
    );
    return () => {
      stale = true;
    };
  });

  return (
    <section aria-labelledby="catalog-title">
      <h1 id="catalog-title">Catalog</h1>
      {scope ? (
        // Keyed by scope: switching workspace loads the lists afresh.
        <div key={`${scope.tenant}\u0000${scope.workspace}`} class="stack">
          <EventTypes
            tenant={scope.tenant}
            workspace={scope.workspace}
            onChange={() => {
              typesChanged.value += 1;
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
