import type { KeyRing } from '../tenant-keys.js';
import { maskIdentifier } from './mask.js';
import { normalizeIdentifier } from './normalize.js';
import { ANY_TYPE, builtInPlaceholders } from './placeholders.js';

export interface RawIdentifier {
  tenant_id: string;
  identifier_type: string;
  raw_value: string;
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

  /** `values` as stored: normalised for their type when they were set (placeholders.ts). */
  add(tenantId: string, type: string, values: readonly string[]): void {
    const builtIn = [
      ...(builtInPlaceholders().get(ANY_TYPE) ?? []),
      ...(builtInPlaceholders().get(type) ?? []),
    ];
    this.byTenantType.set(`${tenantId}/${type}`, new Set([...builtIn, ...values]));
  }

  /**
   * The value normalised (and lowercased, as the lists are stored) against the normalised lists;
   * the value as typed, trimmed and lowercased, against `*` values and phones that do not parse.
   */
  isPlaceholder(tenantId: string, type: string, raw: string, normalized: string): boolean {
    const values = this.byTenantType.get(`${tenantId}/${type}`);
    if (!values) return false;
    return values.has(normalized.toLowerCase()) || values.has(raw.trim().toLowerCase());
  }

  /** The lists by `tenant/type`, as ingest binds them into SQL. */
  toJson(): string {
    return JSON.stringify(
      Object.fromEntries([...this.byTenantType].map(([scope, values]) => [scope, [...values]])),
    );
  }
}

/**
 * Normalises the values SQL leaves to JavaScript (design §10), with null for a value that cannot
 * be normalised (an invalid phone) or is a placeholder.
 */
export function normalizeInJs(
  raws: RawIdentifier[],
  placeholders: PlaceholderRules,
): [string, string, string, string | null][] {
  return raws.map((raw) => {
    const normalized = normalizeIdentifier(raw.identifier_type, raw.raw_value);
    const usable =
      normalized !== null &&
      !placeholders.isPlaceholder(raw.tenant_id, raw.identifier_type, raw.raw_value, normalized);
    return [raw.tenant_id, raw.identifier_type, raw.raw_value, usable ? normalized : null];
  });
}

export function encryptIdentifier(
  keyRing: KeyRing,
  value: IdentifierValue,
): { ciphertext: Buffer; masked: string } {
  return {
    ciphertext: keyRing.forTenant(value.tenantId).encrypt(value.normalized),
    masked: maskIdentifier(value.type, value.normalized),
  };
}
