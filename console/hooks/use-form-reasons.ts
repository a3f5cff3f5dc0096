import { type Signal, useSignal } from '@preact/signals';
import { ApiError } from '../api.js';
import { messageOf, reasonsByField } from '../components/field.js';

/** What the API said of a form's last submit: each refused field's reason, and its message. */
export interface FormReasons {
  reasons: Signal<Map<string, string>>;
  failure: Signal<string | null>;
  /** Sends the form; true when the API took it, else its reasons are shown and false. */
  submit: (send: () => Promise<unknown>) => Promise<boolean>;
}

export function useFormReasons(): FormReasons {
  const reasons = useSignal(new Map<string, string>());
  const failure = useSignal<string | null>(null);
  return {
    reasons,
    failure,
    submit: async (send) => {
      try {
        await send();
        reasons.value = new Map();
        failure.value = null;
        return true;
      } catch (error) {
        reasons.value = error instanceof ApiError ? reasonsByField(error) : new Map();
        failure.value = messageOf(error);
        return false;
      }
    },
  };
}
