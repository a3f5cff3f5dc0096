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
