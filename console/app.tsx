import { useSignal, useSignalEffect } from '@preact/signals';
import { checkToken, SignIn } from './components/sign-in.js';
import { WorkspaceSwitcher } from './components/workspace-switcher.js';
import { PAGES } from './pages/index.js';
import type { ConsolePage } from './pages/registry.js';
import { route } from './router.js';
import { session, signOut } from './session.js';

function pageOf(path: string, pages: readonly ConsolePage[]) {
  const matches = pages.filter(
    (page) => path === page.path || path.startsWith(page.path === '/' ? '/' : `${page.path}/`),
  );
  // The longest prefix wins: `/` matches everything.
  return matches.sort((a, b) => b.path.length - a.path.length)[0] ?? null;
}

export function App() {
  const checking = useSignal(session.token.value !== null && session.whoami.value === null);
  useSignalEffect(() => {
    if (session.token.value && !session.whoami.value)
      // A refused token signs out; the sign-in page then says nothing of the stale one.
      checkToken()
        .catch(() => undefined)
        .finally(() => {
          checking.value = false;
        });
  });
  if (checking.value) return <p class="loading">Checking the token…</p>;
  if (!session.whoami.value) return <SignIn />;
  const operator = session.whoami.value.kind === 'operator';
  const visible = PAGES.filter((page) => operator || !page.operatorOnly);
  // Among the visible pages only: an operator page typed into the hash is not shown either.
  const page = pageOf(route.value, visible);
  const Page = page?.component;
  return (
    <div class="layout">
      <header>
        <a class="skip" href="#main">
          Skip to the page
        </a>
        <strong class="brand">cds</strong>
        <nav aria-label="Console">
          <ul>
            {visible.map((entry) => (
              <li key={entry.path}>
                <a href={`#${entry.path}`} aria-current={entry === page ? 'page' : undefined}>
                  {entry.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <WorkspaceSwitcher />
        <button type="button" class="quiet" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {Page ? <Page path={route.value} /> : <p>No page here.</p>}
      </main>
    </div>
  );
}
