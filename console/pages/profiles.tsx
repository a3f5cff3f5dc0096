import { routeParts } from '../router.js';
import { ProfileLookup } from './profiles/lookup.js';
import { People } from './profiles/people.js';
import { ProfilePage } from './profiles/profile-view.js';
import { currentScope } from './scope.js';

/** `#/profiles`: the workspace's people, and finding one by email or phone; `#/profiles/<id>`: a profile. */
export function Profiles(props: { path: string }) {
  const scope = currentScope();
  const [profileId] = routeParts('/profiles', props.path) ?? [];
  if (!scope)
    return (
      <section>
        <h1>People</h1>
        <p>Choose a workspace.</p>
      </section>
    );
  if (profileId)
    return (
      <ProfilePage
        key={`${scope.tenant}\u0000${scope.workspace}\u0000${profileId}`}
        tenant={scope.tenant}
        workspace={scope.workspace}
        profileId={profileId}
      />
    );
  return (
    <section aria-labelledby="profiles-title">
      <h1 id="profiles-title">People</h1>
      <ProfileLookup tenant={scope.tenant} workspace={scope.workspace} />
      <People
        key={`${scope.tenant}\u0000${scope.workspace}`}
        tenant={scope.tenant}
        workspace={scope.workspace}
      />
    </section>
  );
}
