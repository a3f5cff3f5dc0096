import { type Signal, useSignal } from '@preact/signals';
import { messageOf } from '../components/field.js';

/** A retry route's action and what the last one did, for the status line beside the list. */
export interface Retry {
  /** Retries the row with this id, or every row the route would retry when null. */
  retry: (id: string | null) => Promise<void>;
  outcome: Signal<string | null>;
}

/**
 * A `POST …/retry` of a list of given-up work (quarantined parts, failed webhook deliveries):
 * says what the answer counted, or why it was refused, then reads the list again, since either
 * way its rows may have changed.
 */
export function useRetry<A>(
  send: (id: string | null) => Promise<A>,
  say: (answer: A) => string,
  reload: () => void,
): Retry {
  const outcome = useSignal<string | null>(null);
  return {
    outcome,
    retry: async (id) => {
      try {
        outcome.value = say(await send(id));
      } catch (error) {
        outcome.value = `Retry refused: ${messageOf(error)}`;
      }
      reload();
    },
  };
}
