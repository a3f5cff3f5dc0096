import { session } from '../session.js';

/** What the token can do, as `whoami` says it: the first page after signing in. */
export function Overview() {
  const who = session.whoami.value;
  if (!who) return null;
  return (
    <section aria-labelledby="overview-title">
      <h1 id="overview-title">Overview</h1>
      <dl class="facts">
        <dt>Token</dt>
        <dd>
          {who.kind} token <code>{who.token_id}</code>
        </dd>
        <dt>Tenant</dt>
        <dd>{who.tenant_id ?? 'every tenant'}</dd>
        <dt>Workspace</dt>
        <dd>{who.workspace_id ?? 'every workspace of the tenant'}</dd>
        <dt>Can read</dt>
        <dd>{who.can_read.join(', ')}</dd>
        <dt>Can write</dt>
        <dd>
          {who.can_write ? 'yes' : 'no: this token is read-only, and write controls are hidden'}
        </dd>
      </dl>
    </section>
  );
}
