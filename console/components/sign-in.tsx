import { useSignal } from '@preact/signals';
import { ApiError, api } from '../api.js';
import { rememberToken, session, signOut, type WhoAmI } from '../session.js';

/** Asks `whoami` what the token can do; a token it refuses is forgotten. */
export async function checkToken(): Promise<void> {
  try {
    const who = await api<WhoAmI>('GET', '/v1/whoami');
    session.whoami.value = who;
    session.tenant.value = who.tenant_id;
    session.workspace.value = who.workspace_id;
  } catch (error) {
    signOut();
    throw error;
  }
}

export function SignIn() {
  const token = useSignal('');
  const failure = useSignal<string | null>(null);
  const busy = useSignal(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    busy.value = true;
    failure.value = null;
    rememberToken(token.value.trim());
    try {
      await checkToken();
    } catch (error) {
      failure.value =
        error instanceof ApiError && error.status === 401
          ? 'This token is not valid: it may be mistyped or revoked.'
          : `The server could not check the token: ${(error as Error).message}`;
    } finally {
      busy.value = false;
    }
  };
  return (
    <main class="sign-in">
      <h1>cds console</h1>
      <form onSubmit={submit}>
        <label for="token">Token</label>
        <p id="token-help" class="help">
          A tenant, workspace or operator token. It is kept in this tab only and sent in a header,
          never in a link.
        </p>
        <input
          id="token"
          type="password"
          autocomplete="off"
          spellcheck={false}
          aria-describedby="token-help"
          value={token.value}
          onInput={(event) => {
            token.value = (event.target as HTMLInputElement).value;
          }}
          required
        />
        <button type="submit" disabled={busy.value}>
          Sign in
        </button>
        {failure.value && (
          <p role="alert" class="error">
            {failure.value}
          </p>
        )}
      </form>
    </main>
  );
}
