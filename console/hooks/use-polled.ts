import { type Signal, useSignal, useSignalEffect } from '@preact/signals';
import { messageOf } from '../components/field.js';
import { session } from '../session.js';

/**
 * Reads what a page shows for the session's tenant and workspace, then again every `everyMs`
 * while the page is open (member counts move with each ingested batch), and at once on `refresh`
 * or when the workspace changes. An answer that comes back after the next reading began is
 * dropped, so a slow old answer never replaces a newer one.
 */
export function usePolled<T>(
  read: (tenant: string, workspace: string) => Promise<T>,
  show: (answer: T) => void,
  everyMs: number,
): { failure: Signal<string | null>; refresh: () => void } {
  const failure = useSignal<string | null>(null);
  const readings = useSignal(0);

  useSignalEffect(() => {
    const tenant = session.tenant.value;
    const workspace = session.workspace.value;
    readings.value;
    if (!tenant || !workspace) return;
    let stale = false;
    read(tenant, workspace).then(
      (answer) => {
        if (stale) return;
        show(answer);
        failure.value = null;
      },
      (error) => {
        if (!stale) failure.value = messageOf(error);
      },
    );
    const timer = setTimeout(() => {
      readings.value += 1;
    }, everyMs);
    return () => {
      stale = true;
      clearTimeout(timer);
    };
  });

  return {
    failure,
    refresh: () => {
      readings.value += 1;
    },
  };
}
