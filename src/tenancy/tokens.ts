import { z } from 'zod';
import { type Context, nowIso } from '../context.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { decodeCursor, type Page, type PageQuery, toPage } from '../store/cursor.js';
import type { Session } from '../store/session.js';
import { announceAccessChange } from './access-changes.js';
import { requireRoom } from './quotas.js';
import {
  digestToken,
  generateToken,
  isWellFormedToken,
  kindOfToken,
  newTokenId,
  sameDigest,
  TOKEN_KINDS,
  type TokenKind,
} from './token-format.js';
import { findWorkspace } from './workspaces.js';

/** A token as issued: the only time its secret is shown. */
export const issuedTokenSchema = z.object({
  token_id: z.string(),
  kind: z.enum(TOKEN_KINDS),
  token: z.string(),
  tenant_id: z.string(),
  workspace_id: z.string().nullable(),
  name: z.string().nullable(),
  created_at: z.string(),
});

/** A token as listed: never its secret. */
export const tokenListingSchema = issuedTokenSchema
  .omit({ token: true, tenant_id: true })
  .extend({ revoked_at: z.string().nullable() });

export type IssuedToken = z.infer<typeof issuedTokenSchema>;
export type TokenListing = z.infer<typeof tokenListingSchema>;

export async function insertToken(
  session: Session,
  now: string,
  spec: { tenantId: string; kind: TokenKind; workspaceId: string | null; name: string | null },
): Promise<IssuedToken> {
  const token = generateToken(spec.kind);
  const digest = digestToken(token);
  const tokenId = newTokenId();
  await session.run('insert_token', {
    token_id: tokenId,
    tenant_id: spec.tenantId,
    kind: spec.kind,
    workspace_id: spec.workspaceId,
    name: spec.name,
    token_lookup: digest.lookup,
    token_hash: digest.hash,
    now,
  });
  return {
    token_id: tokenId,
    kind: spec.kind,
    token,
    tenant_id: spec.tenantId,
    workspace_id: spec.workspaceId,
    name: spec.name,
    created_at: now,
  };
}

/** Mints a workspace or collector token; the secret is in the answer and nowhere else. */
export async function issueToken(
  context: Context,
  tenantId: string,
  spec: {
    kind: 'workspace' | 'collector' | 'write_key';
    workspaceId: string | null;
    name: string | null;
  },
): Promise<IssuedToken> {
  return context.store.write(async (session) => {
    if (spec.workspaceId !== null && !(await findWorkspace(session, tenantId, spec.workspaceId))) {
      throw ValidationError.field('workspace_id', `workspace ${spec.workspaceId} does not exist`);
    }
    await requireRoom(session, context.config, tenantId, 'tokens');
    return insertToken(session, nowIso(context), { tenantId, ...spec });
  });
}

const tokenCursor = z.strictObject({ c: z.iso.datetime(), t: z.string() });

/** Oldest first, revoked ones included. */
export async function listTokens(
  context: Context,
  tenantId: string,
  query: PageQuery,
): Promise<Page<TokenListing>> {
  const after = query.cursor === null ? null : decodeCursor(query.cursor, tokenCursor);
  const rows = await context.store.read((session) =>
    session.all<TokenListing>('list_tokens_page', {
      tenant_id: tenantId,
      after_created: after?.c ?? null,
      after_token: after?.t ?? null,
      limit: query.limit + 1,
    }),
  );
  return toPage(
    rows,
    query.limit,
    (row) => ({ c: row.created_at, t: row.token_id }),
    (row) => row,
  );
}

export async function revokeToken(
  context: Context,
  tenantId: string,
  tokenId: string,
): Promise<TokenListing> {
  const listing = await context.store.write(async (session) => {
    const revoked = await session.run('revoke_token', {
      tenant_id: tenantId,
      token_id: tokenId,
      now: nowIso(context),
    });
    if (revoked === 0) throw new NotFoundError(`no active token ${tokenId} in tenant ${tenantId}`);
    return (await session.one<TokenListing>('get_token', {
      tenant_id: tenantId,
      token_id: tokenId,
    })) as TokenListing;
  });
  announceAccessChange(context.store, tenantId);
  return listing;
}

export type Principal =
  | { kind: 'operator'; tokenId: 'operator'; tenantId: null; workspaceId: null }
  | { kind: TokenKind; tokenId: string; tenantId: string; workspaceId: string | null };

interface TokenRow {
  token_id: string;
  tenant_id: string;
  kind: TokenKind;
  workspace_id: string | null;
  token_hash: string;
}

/** The principal behind a presented token, or null for an unknown, malformed or revoked one. */
export async function authenticateToken(
  session: Session,
  token: string,
): Promise<Principal | null> {
  if (!isWellFormedToken(token)) return null;
  const digest = digestToken(token);
  const candidates = await session.all<TokenRow>('find_tokens_by_lookup', {
    token_lookup: digest.lookup,
  });
  const row = candidates.find((candidate) => sameDigest(candidate.token_hash, digest.hash));
  if (!row || row.kind !== kindOfToken(token)) return null;
  return {
    kind: row.kind,
    tokenId: row.token_id,
    tenantId: row.tenant_id,
    workspaceId: row.workspace_id,
  };
}
