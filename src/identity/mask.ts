function starEmail(value: string): string {
  const at = value.lastIndexOf('@');
  if (at < 1) return `${value.slice(0, 1)}***`;
  const local = value.slice(0, at);
  const domain = value.slice(at + 1);
  const dot = domain.lastIndexOf('.');
  const host = dot > 0 ? domain.slice(0, dot) : domain;
  const tld = dot > 0 ? domain.slice(dot) : '';
  return `${local.slice(0, 1)}***@${host.slice(0, 1)}***${tld}`;
}

function starPhone(value: string): string {
  // E.164: keep the country code (up to the first 3 characters, e.g. +91) and the last 4 digits.
  const head = value.slice(0, 3);
  const tail = value.slice(-4);
  return head + '*'.repeat(Math.max(value.length - head.length - tail.length, 0)) + tail;
}

/** Design §11: `j***@g***.com`, `+91******3210`, otherwise the first 2 characters and `***`. */
export function maskIdentifier(type: string, normalized: string): string {
  if (type === 'email') return starEmail(normalized);
  if (type === 'phone') return starPhone(normalized);
  return `${normalized.slice(0, 2)}***`;
}

const EMAIL_LIKE = /^[^\s@]+@[^\s@]+$/;

/**
 * Event properties as people who see masked identifiers read them (the live view, a profile's
 * history): identifier values left `properties` at ingest, and any other value that holds an
 * email address is masked as an email is.
 */
export function maskEmailsIn(value: unknown): unknown {
  if (typeof value === 'string')
    return EMAIL_LIKE.test(value) ? maskIdentifier('email', value) : value;
  if (Array.isArray(value)) return value.map(maskEmailsIn);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = Object.create(null);
    for (const [key, inner] of Object.entries(value)) out[key] = maskEmailsIn(inner);
    return out;
  }
  return value;
}
