import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { writeFileAtomically } from '../durable-write.js';
import { ValidationError } from '../errors.js';
import { PRIVATE_FILE_MODE } from '../store/file-modes.js';
import type { Session } from '../store/session.js';
import { digestToken, isWellFormedToken, sameDigest } from '../tenancy/token-format.js';

const collectorTokenEntry = z.object({
  token_id: z.string(),
  workspace_id: z.string().nullable(),
  token_lookup: z.string(),
  token_hash: z.string(),
});

// Tenants are a list, not an object keyed by tenant id: a tenant named `constructor` or
// `__proto__` is data, never a key of a plain object (here, in the file or in JSON.parse).
const tenantEntry = z.object({
  tenant_id: z.string(),
  workspaces: z.array(z.string()),
  /** Only workspaces that allow any; a file written before allowed origins existed has none. */
  allowed_origins: z
    .array(z.object({ workspace_id: z.string(), origins: z.array(z.string()) }))
    .default([]),
  /** Only workspaces that name any; analytics.js's settings list them (consentSettings). */
  consent_categories: z
    .array(z.object({ workspace_id: z.string(), categories: z.array(z.string()) }))
    .default([]),
  event_types: z.array(z.string()),
  collector_tokens: z.array(collectorTokenEntry),
  /** Browser write keys, each of one workspace; a registry written before they existed has none. */
  write_keys: z.array(collectorTokenEntry.extend({ workspace_id: z.string() })).default([]),
});

const registrySnapshot = z.object({
  version: z.number().int().nonnegative(),
  generated_at: z.string(),
  tenants: z.array(tenantEntry),
});

type CollectorTokenEntry = z.infer<typeof collectorTokenEntry>;
/** One tenant's part of the registry: in cluster mode, the value of its key in the bucket. */
export type TenantEntry = z.infer<typeof tenantEntry>;

/** A tenant entry as JSON text from the bus; anything else throws, naming what is wrong. */
export function parseTenantEntry(text: string): TenantEntry {
  return tenantEntry.parse(JSON.parse(text));
}

/**
 * What a collector needs to accept or refuse an event without the database (design §1, §8).
 * `version` only grows: a collector never replaces a registry by one with a lower version.
 */
export type RegistrySnapshot = z.infer<typeof registrySnapshot>;

export interface CollectorPrincipal {
  tenantId: string;
  workspaceId: string | null;
  tokenId: string;
}

/** A browser write key's tenant and workspace (docs/decisions.md "Browser write keys"). */
export interface WriteKeyPrincipal {
  tenantId: string;
  workspaceId: string;
  tokenId: string;
}

type TokenEntry = CollectorTokenEntry & { tenant_id: string };

/** Write keys remembered at most (`Registry.authenticateWriteKey`). */
const MAX_CHECKED_WRITE_KEYS = 10_000;

/** Adds a tenant's tokens to a look-up by the first digits of their digests. */
function indexTokens(
  index: Map<string, TokenEntry[]>,
  tenantId: string,
  tokens: CollectorTokenEntry[],
): void {
  for (const token of tokens) {
    const entry = { ...token, tenant_id: tenantId };
    const sharing = index.get(token.token_lookup);
    if (sharing) sharing.push(entry);
    else index.set(token.token_lookup, [entry]);
  }
}

function unindexTokens(
  index: Map<string, TokenEntry[]>,
  tenantId: string,
  tokens: CollectorTokenEntry[],
): void {
  for (const token of tokens) {
    const left =
      index.get(token.token_lookup)?.filter((entry) => entry.tenant_id !== tenantId) ?? [];
    if (left.length > 0) index.set(token.token_lookup, left);
    else index.delete(token.token_lookup);
  }
}

/** The entry a presented token is, by its digest, or undefined. */
function findToken(index: Map<string, TokenEntry[]>, token: string): TokenEntry | undefined {
  const digest = digestToken(token);
  return index.get(digest.lookup)?.find((entry) => sameDigest(entry.token_hash, digest.hash));
}

export async function readRegistrySnapshot(
  session: Session,
  now: string,
  version: number,
): Promise<RegistrySnapshot> {
  const tenants = await session.json<TenantEntry[]>('registry_snapshot');
  return { version, generated_at: now, tenants };
}

/** Written atomically, so a collector never reads half a file. */
export function writeRegistryFile(path: string, snapshot: RegistrySnapshot): Promise<void> {
  return writeFileAtomically(path, JSON.stringify(snapshot), PRIVATE_FILE_MODE);
}

/** The snapshot the owner wrote; a file that is not one is refused, naming the way to rewrite it. */
export async function readRegistryFile(path: string): Promise<RegistrySnapshot> {
  const text = await readFile(path, 'utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Reported below, as for JSON that is not a snapshot.
  }
  const snapshot = registrySnapshot.safeParse(parsed);
  if (snapshot.success) return snapshot.data;
  throw ValidationError.field(
    'registry.json',
    'is not a registry the owner wrote; start cds serve on this data dir, or change anything with an admin command, to write it again',
  );
}

/** The current snapshot, with the look-ups the collector routes make on every request. */
export class Registry {
  private tenants = new Map<string, TenantEntry>();
  private workspaces = new Map<string, Set<string>>();
  private eventTypes = new Map<string, Set<string>>();
  /** Allowed browser origins by tenant id, then workspace id. */
  private origins = new Map<string, Map<string, readonly string[]>>();
  private tokensByLookup = new Map<string, TokenEntry[]>();
  private writeKeysByLookup = new Map<string, TokenEntry[]>();
  /**
   * Write keys already checked, with their principal or null: a page sends its key with every
   * batch, and its digest was a fifth of a small batch's time. Emptied whenever the keys change.
   */
  private checkedWriteKeys = new Map<string, WriteKeyPrincipal | null>();
  private generatedAt = '';
  private currentVersion = -1;

  constructor(snapshot: RegistrySnapshot) {
    this.replace(snapshot);
  }

  /** The version in force. */
  get version(): number {
    return this.currentVersion;
  }

  /**
   * Takes a newer snapshot; one no newer than the registry in force is ignored (false), so a
   * revocation or a new workspace, once seen, is never undone by an older snapshot.
   */
  replace(snapshot: RegistrySnapshot): boolean {
    if (snapshot.version <= this.currentVersion) return false;
    this.tenants = new Map();
    this.workspaces = new Map();
    this.eventTypes = new Map();
    this.origins = new Map();
    this.tokensByLookup = new Map();
    this.writeKeysByLookup = new Map();
    this.checkedWriteKeys = new Map();
    for (const tenant of snapshot.tenants) this.applyTenant(tenant);
    this.generatedAt = snapshot.generated_at;
    this.currentVersion = snapshot.version;
    return true;
  }

  /**
   * Takes one tenant's entry in place of the one in force (cluster mode: the bucket's key of
   * that tenant changed). The bucket orders a key's changes, so no version is compared here.
   */
  applyTenant(tenant: TenantEntry): void {
    this.removeTenant(tenant.tenant_id);
    this.tenants.set(tenant.tenant_id, tenant);
    this.workspaces.set(tenant.tenant_id, new Set(tenant.workspaces));
    this.eventTypes.set(tenant.tenant_id, new Set(tenant.event_types));
    this.origins.set(
      tenant.tenant_id,
      new Map(tenant.allowed_origins.map((entry) => [entry.workspace_id, entry.origins])),
    );
    indexTokens(this.tokensByLookup, tenant.tenant_id, tenant.collector_tokens);
    indexTokens(this.writeKeysByLookup, tenant.tenant_id, tenant.write_keys);
    this.checkedWriteKeys.clear();
  }

  /** Forgets a tenant: its events and tokens are refused from now on. */
  removeTenant(tenantId: string): void {
    const known = this.tenants.get(tenantId);
    if (!known) return;
    unindexTokens(this.tokensByLookup, tenantId, known.collector_tokens);
    unindexTokens(this.writeKeysByLookup, tenantId, known.write_keys);
    this.checkedWriteKeys.clear();
    this.tenants.delete(tenantId);
    this.workspaces.delete(tenantId);
    this.eventTypes.delete(tenantId);
    this.origins.delete(tenantId);
  }

  /** The workspaces and event types of one tenant, without its tokens: what checking events takes. */
  eventCatalogOf(tenantId: string): RegistrySnapshot {
    const tenant = this.tenants.get(tenantId);
    return {
      version: this.currentVersion,
      generated_at: this.generatedAt,
      tenants: tenant ? [{ ...tenant, collector_tokens: [], write_keys: [] }] : [],
    };
  }

  /** The consent categories a workspace names, for analytics.js's settings. */
  consentCategories(tenantId: string, workspaceId: string): readonly string[] {
    const entry = this.tenants
      .get(tenantId)
      ?.consent_categories.find((item) => item.workspace_id === workspaceId);
    return entry?.categories ?? [];
  }

  hasWorkspace(tenantId: string, workspaceId: string): boolean {
    return this.workspaces.get(tenantId)?.has(workspaceId) ?? false;
  }

  /** The browser origins a workspace allowed through the API (not the operator's defaults). */
  allowedOrigins(tenantId: string, workspaceId: string): readonly string[] {
    return this.origins.get(tenantId)?.get(workspaceId) ?? [];
  }

  /** Every workspace's allowed origins, for a preflight that names no workspace. */
  *everyAllowedOrigins(): Iterable<readonly string[]> {
    for (const byWorkspace of this.origins.values()) yield* byWorkspace.values();
  }

  hasEventType(tenantId: string, eventName: string): boolean {
    return this.eventTypes.get(tenantId)?.has(eventName) ?? false;
  }

  authenticateCollector(token: string): CollectorPrincipal | null {
    if (!token.startsWith('cpc_') || !isWellFormedToken(token)) return null;
    const match = findToken(this.tokensByLookup, token);
    return match
      ? { tenantId: match.tenant_id, workspaceId: match.workspace_id, tokenId: match.token_id }
      : null;
  }

  /** An active browser write key's workspace, or null (unknown, revoked, or not a write key). */
  authenticateWriteKey(key: string): WriteKeyPrincipal | null {
    if (!key.startsWith('cpk_') || !isWellFormedToken(key)) return null;
    const checked = this.checkedWriteKeys.get(key);
    if (checked !== undefined) return checked;
    const match = findToken(this.writeKeysByLookup, key);
    const principal = match?.workspace_id
      ? { tenantId: match.tenant_id, workspaceId: match.workspace_id, tokenId: match.token_id }
      : null;
    // Well-formed keys only, and a bounded number: a flood of made-up keys cannot grow it.
    if (this.checkedWriteKeys.size >= MAX_CHECKED_WRITE_KEYS) this.checkedWriteKeys.clear();
    this.checkedWriteKeys.set(key, principal);
    return principal;
  }
}
