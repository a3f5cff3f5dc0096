import { describe, expect, it } from 'vitest';
import { parseTenantEntry, Registry, type TenantEntry } from '../../src/collector/registry.js';
import { digestToken, generateToken } from '../../src/tenancy/token-format.js';

/** A tenant entry as an owner puts it in the registry bucket, with one collector token. */
function entry(tenantId: string, token: string, workspaces = ['eu']): TenantEntry {
  const digest = digestToken(token);
  return {
    tenant_id: tenantId,
    workspaces,
    allowed_origins: [{ workspace_id: 'eu', origins: [`https://${tenantId}.example`] }],
    event_types: ['page_viewed'],
    collector_tokens: [
      {
        token_id: `tok_${tenantId}`,
        workspace_id: null,
        token_lookup: digest.lookup,
        token_hash: digest.hash,
      },
    ],
    write_keys: [],
    consent_categories: [],
  };
}

describe('the registry per tenant (cluster mode: one bucket key each)', () => {
  const empty = () => new Registry({ version: 0, generated_at: '', tenants: [] });

  it('applies a tenant, replaces it whole, and forgets it', () => {
    const registry = empty();
    const first = generateToken('collector');
    const second = generateToken('collector');
    registry.applyTenant(entry('acme', first));
    expect(registry.authenticateCollector(first)).toMatchObject({ tenantId: 'acme' });
    expect(registry.hasWorkspace('acme', 'eu')).toBe(true);
    expect(registry.allowedOrigins('acme', 'eu')).toEqual(['https://acme.example']);

    registry.applyTenant(entry('acme', second, ['us']));
    expect(registry.authenticateCollector(first)).toBeNull();
    expect(registry.authenticateCollector(second)).toMatchObject({ tenantId: 'acme' });
    expect(registry.hasWorkspace('acme', 'eu')).toBe(false);
    expect(registry.hasWorkspace('acme', 'us')).toBe(true);

    registry.removeTenant('acme');
    expect(registry.authenticateCollector(second)).toBeNull();
    expect(registry.hasEventType('acme', 'page_viewed')).toBe(false);
    expect([...registry.everyAllowedOrigins()]).toEqual([]);
  });

  it('keeps each tenant apart, names such as __proto__ included', () => {
    const registry = empty();
    const mine = generateToken('collector');
    const theirs = generateToken('collector');
    registry.applyTenant(entry('__proto__', mine));
    registry.applyTenant(entry('constructor', theirs));
    registry.removeTenant('constructor');
    expect(registry.authenticateCollector(mine)).toMatchObject({ tenantId: '__proto__' });
    expect(registry.authenticateCollector(theirs)).toBeNull();
  });

  it('parses an entry from the bucket, and refuses what is not one', () => {
    const token = generateToken('collector');
    expect(parseTenantEntry(JSON.stringify(entry('acme', token)))).toEqual(entry('acme', token));
    expect(() => parseTenantEntry('{"tenant_id":"acme"}')).toThrow();
    expect(() => parseTenantEntry('not json')).toThrow();
  });
});
