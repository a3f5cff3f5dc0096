import { maskIdentifier } from './mask.js';
import { normalizeIdentifier } from './normalize.js';
import { BUILT_IN_PLACEHOLDERS } from './placeholders.js';
import type { KeyRing } from './tenant-keys.js';

export interface RawIdentifier {
  tenant_id: string;
  identifier_type: string;
  raw_value: string;
}

export interface KeyedIdentifier extends RawIdentifier {
  identifier_key: string;
}

/** A usable identifier value, kept in memory only for the batch, to encrypt it if it is new. */
export interface IdentifierValue {
  tenantId: string;
  type: string;
  normalized: string;
}

/** Placeholder values per tenant and type: the tenant's own and the built-in ones. */
export class PlaceholderRules {
  private readonly byTenantType = new Map<string, Set<string>>();

  add(tenantId: string, type: string, values: readonly string[]): void {
    const builtIn = [...(BUILT_IN_PLACEHOLDERS['*'] ?? []), ...(BUILT_IN_PLACEHOLDERS[type] ?? [])];
    this.byTenantType.set(`${tenantId}\0${type}`, new Set([...builtIn, ...values]));
  }

  /** Compared after normalisation, and lowercased, as the lists are stored. */
  isPlaceholder(tenantId: string, type: string, raw: string, normalized: string): boolean {
    const values = this.byTenantType.get(`${tenantId}\0${type}`);
    if (!values) return false;
    return values.has(normalized.toLowerCase()) || values.has(raw.trim().toLowerCase());
  }
}

export interface KeyedIdentifiers {
  keyed: KeyedIdentifier[];
  values: Map<string, IdentifierValue>;
  dropped: number;
}

/**
 * Normalises each distinct raw value once (design §10), drops placeholders and values that cannot
 * be normalised, and keys the rest with the tenant's HMAC.
 */
export function keyIdentifiers(
  raws: RawIdentifier[],
  placeholders: PlaceholderRules,
  keyRing: KeyRing,
): KeyedIdentifiers {
  const keyed: KeyedIdentifier[] = [];
  const values = new Map<string, IdentifierValue>();
  let dropped = 0;
  for (const raw of raws) {
    const normalized = normalizeIdentifier(raw.identifier_type, raw.raw_value);
    if (
      normalized === null ||
      placeholders.isPlaceholder(raw.tenant_id, raw.identifier_type, raw.raw_value, normalized)
    ) {
      dropped += 1;
      continue;
    }
    const key = keyRing.forTenant(raw.tenant_id).identifierKey(raw.identifier_type, normalized);
    keyed.push({ ...raw, identifier_key: key });
    values.set(`${raw.tenant_id}\0${key}`, {
      tenantId: raw.tenant_id,
      type: raw.identifier_type,
      normalized,
    });
  }
  return { keyed, values, dropped };
}

export function sealIdentifier(
  keyRing: KeyRing,
  value: IdentifierValue,
): { ciphertext: Buffer; masked: string } {
  return {
    ciphertext: keyRing.forTenant(value.tenantId).encrypt(value.normalized),
    masked: maskIdentifier(value.type, value.normalized),
  };
}
