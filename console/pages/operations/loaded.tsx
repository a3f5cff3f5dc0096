import { type Signal, useSignal, useSignalEffect } from '@preact/signals';
import type { ComponentChildren } from 'preact';
import { api } from '../../api.js';
import { messageOf } from '../../components/field.js';

/**
 * A section of the operations page over one GET: loads it, shows the error when it fails, and
 * loads it again after an action (`reload`).
 */
export function useLoaded<T>(path: string): {
  data: Signal<T | null>;
  failure: Signal<string | null>;
  reload: () => void;
} {
  const data = useSignal<T | null>(null);
  const failure = useSignal<string | null>(null);
  const round = useSignal(0);
  useSignalEffect(() => {
    round.value;
    api<T>('GET', path).then(
      (answer) => {
        data.value = answer;
        failure.value = null;
      },
      (error) => {
        failure.value = messageOf(error);
      },
    );
  });
  return {
    data,
    failure,
    reload: () => {
      round.value += 1;
    },
  };
}

export function Section(props: {
  id: string;
  title: string;
  failure: string | null;
  children: ComponentChildren;
}) {
  return (
    <section aria-labelledby={props.id} class="stack">
      <h2 id={props.id}>{props.title}</h2>
      {props.failure && (
        <p role="alert" class="error">
          {props.failure}
        </p>
      )}
      {props.children}
    </section>
  );
}
