import { open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ValidationError } from '../errors.js';
import type { Session } from '../store/session.js';
import { syncDirectory } from '../sync-directory.js';
import { digestToken, isWellFormedToken, sameDigest } from '../tenancy/token-format.js';

interface CollectorTokenEntry {
  token_id: string;
  workspace_id: string | null;
  token_lookup: string;
  token_hash: string;
}

interface TenantEntry {
  workspaces: string[];
  event_types: string[];
  collector_tokens: CollectorTokenEntry[];
}

/** What a collector needs to accept or refuse an event without the database (design §1, §8). */
export interface RegistrySnapshot {
  generated_at: string;
  tenants: Record<string, TenantEntry>;
}

export interface CollectorPrincipal {
  tenantId: string;
  workspaceId: string | null;
  tokenId: string;
}

export async function readRegistrySnapshot(
  session: Session,
  now: string,
): Promise<RegistrySnapshot> {
  const tenants: Record<string, TenantEntry> = {};
  const entry = (tenantId: string): TenantEntry => {
    tenants[tenantId] ??= { workspaces: [], event_types: [], collector_tokens: [] };
    return tenants[tenantId];
  };
  for (const row of await session.all<{ tenant_id: string; workspaces: string[] | null }>(
    'registry_workspaces',
  )) {
    entry(row.tenant_id).workspaces = row.workspaces ?? [];
  }
  for (const row of await session.all<{ tenant_id: string; event_types: string[] }>(
    'registry_event_types',
  )) {
    entry(row.tenant_id).event_types = row.event_types;
  }
  for (const row of await session.all<CollectorTokenEntry & { tenant_id: string }>(
    'registry_collector_tokens',
  )) {
    const { tenant_id, ...token } = row;
    entry(tenant_id).collector_tokens.push(token);
  }
  return { generated_at: now, tenants };
}

/** Written atomically (temp file, then rename), so a collector never reads half a file. */
export async function writeRegistryFile(path: string, snapshot: RegistrySnapshot): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`;
  // Synced before the rename, so a power cut leaves the old file or the new one, never an empty one.
  const file = await open(temporary, 'w', 0o600);
  try {
    await file.writeFile(JSON.stringify(snapshot));
    await file.datasync();
  } finally {
    await file.close();
  }
  await rename(temporary, path);
  await syncDirectory(dirname(path));
}

/** The snapshot the owner wrote; a file that is not one is refused, naming the way to rewrite it. */
export async function readRegistryFile(path: string): Promise<RegistrySnapshot> {
  const text = await readFile(path, 'utf8');
  try {
    const snapshot = JSON.parse(text) as RegistrySnapshot;
    if (typeof snapshot?.tenants === 'object' && snapshot.tenants !== null) return snapshot;
  } catch {
    // Reported below, as for JSON that is not a snapshot.
  }
  throw ValidationError.field(
    'registry.json',
    'is not a registry the owner wrote; start cds serve on this data dir, or change anything with an admin command, to write it again',
  );
}

/** The current snapshot, with the look-ups the collector routes make on every request. */
export class Registry {
  private workspaces = new Map<string, Set<string>>();
  private eventTypes = new Map<string, Set<string>>();
  private tokensByLookup = new Map<string, (CollectorTokenEntry & { tenant_id: string })[]>();
  private snapshot: RegistrySnapshot = { generated_at: '', tenants: {} };

  constructor(snapshot: RegistrySnapshot) {
    this.replace(snapshot);
  }

  replace(snapshot: RegistrySnapshot): void {
    const workspaces = new Map<string, Set<string>>();
    const eventTypes = new Map<string, Set<string>>();
    const tokens = new Map<string, (CollectorTokenEntry & { tenant_id: string })[]>();
    for (const [tenantId, tenant] of Object.entries(snapshot.tenants)) {
      workspaces.set(tenantId, new Set(tenant.workspaces));
      eventTypes.set(tenantId, new Set(tenant.event_types));
      for (const token of tenant.collector_tokens) {
        tokens.set(token.token_lookup, [
          ...(tokens.get(token.token_lookup) ?? []),
          { ...token, tenant_id: tenantId },
        ]);
      }
    }
    this.workspaces = workspaces;
    this.eventTypes = eventTypes;
    this.tokensByLookup = tokens;
    this.snapshot = snapshot;
  }

  /** The workspaces and event types of one tenant, without its tokens: what checking events takes. */
  eventCatalogOf(tenantId: string): RegistrySnapshot {
    const tenant = this.snapshot.tenants[tenantId];
    return {
      generated_at: this.snapshot.generated_at,
      tenants: tenant
        ? {
            [tenantId]: {
              workspaces: tenant.workspaces,
              event_types: tenant.event_types,
              collector_tokens: [],
            },
          }
        : {},
    };
  }

  hasWorkspace(tenantId: string, workspaceId: string): boolean {
    return this.workspaces.get(tenantId)?.has(workspaceId) ?? false;
  }

  hasEventType(tenantId: string, eventName: string): boolean {
    return this.eventTypes.get(tenantId)?.has(eventName) ?? false;
  }

  authenticateCollector(token: string): CollectorPrincipal | null {
    if (!token.startsWith('cpc_') || !isWellFormedToken(token)) return null;
    const digest = digestToken(token);
    const match = this.tokensByLookup
      .get(digest.lookup)
      ?.find((entry) => sameDigest(entry.token_hash, digest.hash));
    return match
      ? { tenantId: match.tenant_id, workspaceId: match.workspace_id, tokenId: match.token_id }
      : null;
  }
}
