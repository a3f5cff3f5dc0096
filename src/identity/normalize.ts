import type { parsePhoneNumberFromString as ParsePhoneNumber } from 'libphonenumber-js/max';
import { requirePackage } from '../require-package.js';

let parsePhone: typeof ParsePhoneNumber | undefined;

/**
 * libphonenumber's full metadata is a hundred modules: it is loaded with the first phone number,
 * not by every process that imports identity code (a CLI command listing tokens).
 */
function phoneParser(): typeof ParsePhoneNumber {
  parsePhone ??= requirePackage<{ parsePhoneNumberFromString: typeof ParsePhoneNumber }>(
    'libphonenumber-js/max',
  ).parsePhoneNumberFromString;
  return parsePhone;
}

/** A number without a country code is taken as Indian (interface "Identifier handling"). */
export const DEFAULT_PHONE_COUNTRY = 'IN';

/**
 * The form an identifier is matched in, or null when it cannot be used (an unparsable phone, an
 * empty value). Email is trimmed and lowercased; phone becomes E.164; other types are trimmed.
 */
export function normalizeIdentifier(type: string, raw: unknown): string | null {
  if (typeof raw !== 'string' && typeof raw !== 'number') return null;
  const value = String(raw).trim();
  if (value === '') return null;
  switch (type) {
    case 'email':
      return value.toLowerCase();
    case 'phone': {
      const phone = phoneParser()(value, DEFAULT_PHONE_COUNTRY);
      return phone?.isValid() ? phone.number : null;
    }
    default:
      return value;
  }
}
