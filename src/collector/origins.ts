import { z } from 'zod';
import type { CollectorRuntime } from './runtime.js';

/** At most this many allowed origins a workspace (each one is checked on every browser request). */
export const MAX_ALLOWED_ORIGINS = 100;

/**
 * An origin as a browser sends it (`https://shop.example.com`, `http://127.0.0.1:5173`), or a
 * pattern whose first label is `*` (`https://*.example.com`): no path, no trailing slash, a port
 * only when it is not the scheme's default. Browsers send scheme and host lowercase, so they are
 * stored so.
 */
const ORIGIN_PATTERN =
  /^https?:\/\/(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?$/;

export const allowedOriginSchema = z
  .string()
  .max(253)
  .trim()
  .toLowerCase()
  .regex(
    ORIGIN_PATTERN,
    'must be an origin such as https://shop.example.com or a pattern such as https://*.example.com (lowercase, no path)',
  );

export const allowedOriginsSchema = z
  .array(allowedOriginSchema)
  .max(MAX_ALLOWED_ORIGINS, `holds at most ${MAX_ALLOWED_ORIGINS} origins`);

/** What a `*` stands for: one or more labels of a host name, no port, no path. */
const SUBDOMAINS = /^[a-z0-9-]+(\.[a-z0-9-]+)*$/;

/**
 * Whether `origin` (the Origin header as sent) is one of `allowed`. A pattern `https://*.x.com`
 * matches every origin of that scheme and port under `x.com` (`https://a.x.com`,
 * `https://a.b.x.com`) but not `https://x.com` itself: a shop lists its apex on its own.
 */
export function originAllowed(origin: string, allowed: readonly string[]): boolean {
  for (const entry of allowed) {
    if (entry === origin) return true;
    const star = entry.indexOf('://*.');
    if (star === -1) continue;
    const scheme = entry.slice(0, star + 3);
    const suffix = entry.slice(star + 4);
    if (
      origin.startsWith(scheme) &&
      origin.endsWith(suffix) &&
      SUBDOMAINS.test(origin.slice(scheme.length, origin.length - suffix.length))
    ) {
      return true;
    }
  }
  return false;
}

/** The workspace's own allowed origins, and the operator's defaults for its tenant. */
export function originAllowedFor(
  runtime: CollectorRuntime,
  origin: string,
  tenantId: string,
  workspaceId: string,
): boolean {
  return (
    originAllowed(origin, runtime.corsOrigins.get(tenantId) ?? []) ||
    originAllowed(origin, runtime.registry.allowedOrigins(tenantId, workspaceId))
  );
}

/** For a preflight of a request that names its workspace in headers, which a preflight omits. */
export function originAllowedAnywhere(runtime: CollectorRuntime, origin: string): boolean {
  for (const allowed of runtime.corsOrigins.values()) {
    if (originAllowed(origin, allowed)) return true;
  }
  for (const allowed of runtime.registry.everyAllowedOrigins()) {
    if (originAllowed(origin, allowed)) return true;
  }
  return false;
}
