import { useSignal } from '@preact/signals';
import { ApiError, api, pathOf } from '../../api.js';
import { Field, inputValue, messageOf } from '../../components/field.js';
import { navigate } from '../../router.js';

/**
 * Finds a profile by email or phone. The value travels in the API request only; the page goes
 * to `#/profiles/<id>`, so the browser's history holds the id, never the email or phone.
 */
export function ProfileLookup(props: { tenant: string; workspace: string }) {
  const type = useSignal<'email' | 'phone'>('email');
  const value = useSignal('');
  const failure = useSignal<string | null>(null);

  const submit = async (event: Event) => {
    event.preventDefault();
    failure.value = null;
    const query = new URLSearchParams({ [type.value]: value.value.trim() });
    try {
      const found = await api<{ profile_id: string }>(
        'GET',
        `${pathOf`/v1/tenants/${props.tenant}/workspaces/${props.workspace}/profiles/lookup`}?${query}`,
      );
      value.value = '';
      navigate(`/profiles/${found.profile_id}`);
    } catch (error) {
      failure.value =
        error instanceof ApiError && error.status === 404
          ? `No profile in ${props.workspace} has that ${type.value}.`
          : messageOf(error);
    }
  };

  return (
    <form class="stack" onSubmit={submit} aria-labelledby="lookup-title" autocomplete="off">
      <h2 id="lookup-title">Find a profile</h2>
      <Field id="lookup-type" label="Identifier">
        {(described) => (
          <select
            {...described}
            value={type.value}
            onChange={(event) => {
              type.value = inputValue(event) === 'phone' ? 'phone' : 'email';
            }}
          >
            <option value="email">Email</option>
            <option value="phone">Phone</option>
          </select>
        )}
      </Field>
      <Field id="lookup-value" label={type.value === 'email' ? 'Email' : 'Phone'}>
        {(described) => (
          <input
            {...described}
            type={type.value === 'email' ? 'email' : 'tel'}
            required
            value={value.value}
            onInput={(event) => {
              value.value = inputValue(event);
            }}
          />
        )}
      </Field>
      {failure.value && (
        <p role="alert" class="error">
          {failure.value}
        </p>
      )}
      <button type="submit">Find</button>
    </form>
  );
}
