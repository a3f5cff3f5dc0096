import { computed, signal } from '@preact/signals';

/** What `GET /v1/whoami` says a token can do. */
export interface WhoAmI {
  token_id: string;
  kind: 'operator' | 'tenant' | 'workspace' | 'collector';
  tenant_id: string | null;
  workspace_id: string | null;
  can_read: string[];
  can_write: boolean;
}

/**
 * The token lives in sessionStorage only: gone with the tab, never in a URL, a cookie or
 * localStorage, where it would outlive the session or travel with requests it was not meant for.
 */
const TOKEN_KEY = 'cds.console.token';

function storedToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export const session = {
  token: signal<string | null>(storedToken()),
  whoami: signal<WhoAmI | null>(null),
  /** The tenant and workspace the pages show; a workspace token has exactly one. */
  tenant: signal<string | null>(null),
  workspace: signal<string | null>(null),
};

export const canWrite = computed(() => session.whoami.value?.can_write === true);

export function rememberToken(token: string): void {
  session.token.value = token;
  try {
    sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // A browser that refuses storage keeps the token in this page only.
  }
}

export function signOut(): void {
  session.token.value = null;
  session.whoami.value = null;
  session.tenant.value = null;
  session.workspace.value = null;
  try {
    sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Nothing was stored.
  }
}
