import type { Signal } from '@preact/signals';
import type { ComponentChildren } from 'preact';
import type { ApiError } from '../api.js';

/**
 * A labelled control with the API's reason for refusing it beside it (a 422's `details`), tied
 * to the control by `aria-describedby` so a screen reader says why.
 */
export function Field(props: {
  id: string;
  label: string;
  reason?: string | undefined;
  hint?: string;
  children: (described: {
    id: string;
    'aria-describedby'?: string;
    'aria-invalid'?: boolean;
  }) => ComponentChildren;
}) {
  const reasonId = `${props.id}-reason`;
  const hintId = `${props.id}-hint`;
  const describedBy = [props.hint ? hintId : '', props.reason ? reasonId : '']
    .filter((id) => id !== '')
    .join(' ');
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      {props.children({
        id: props.id,
        ...(describedBy ? { 'aria-describedby': describedBy } : {}),
        ...(props.reason ? { 'aria-invalid': true } : {}),
      })}
      {props.hint && (
        <p id={hintId} class="help">
          {props.hint}
        </p>
      )}
      {props.reason && (
        <p id={reasonId} class="error field-reason">
          {props.reason}
        </p>
      )}
    </div>
  );
}

/** The value of the input or select an event came from. */
export function inputValue(event: Event): string {
  return (event.target as HTMLInputElement | HTMLSelectElement).value;
}

/** What to say of a failed call: the API's message, else the error's. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A field's reasons, with `dedup_key_paths.0` told beside `dedup_key_paths`. */
export function reasonsByField(error: ApiError): Map<string, string> {
  const reasons = new Map<string, string>();
  for (const [path, reason] of error.fieldReasons()) {
    const field = path.split('.')[0] ?? path;
    if (!reasons.has(field)) reasons.set(field, path === field ? reason : `${path}: ${reason}`);
  }
  return reasons;
}

/** A labelled text (or number) input with the API's reason beside it, as `Field` ties them. */
export function TextField(props: {
  id: string;
  label: string;
  value: string;
  onValue: (value: string) => void;
  reason?: string | undefined;
  hint?: string;
  required?: boolean;
  numeric?: boolean;
}) {
  return (
    <Field
      id={props.id}
      label={props.label}
      reason={props.reason}
      {...(props.hint ? { hint: props.hint } : {})}
    >
      {(described) => (
        <input
          {...described}
          {...(props.numeric ? { type: 'number', inputMode: 'numeric' } : {})}
          required={props.required}
          value={props.value}
          onInput={(event) => props.onValue(inputValue(event))}
        />
      )}
    </Field>
  );
}

/** An option per value, each shown as its value (statuses, kinds, ids). */
export function Options({ values }: { values: readonly string[] }) {
  return (
    <>
      {values.map((value) => (
        <option key={value} value={value}>
          {value}
        </option>
      ))}
    </>
  );
}

/** What ties a `TextField` to one key of a form's draft, and to the API's reason for that key. */
export function boundTo<K extends string>(
  draft: Signal<Record<K, string>>,
  key: K,
  reasons: Map<string, string>,
): { value: string; onValue: (value: string) => void; reason: string | undefined } {
  return {
    value: draft.value[key],
    onValue: (value) => {
      draft.value = { ...draft.value, [key]: value };
    },
    reason: reasons.get(key),
  };
}
