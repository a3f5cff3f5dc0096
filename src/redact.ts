/** A reason kept for operators is short: a DuckDB message can quote a whole line. */
const MAX_MESSAGE_CHARACTERS = 500;

/**
 * An error's message without what it quotes. DuckDB quotes the values it could not read, and an
 * event's values may be a customer's email or phone, which never reach a log or a listing in
 * plain text.
 */
export function withoutQuotedValues(message: string): string {
  const redacted = message.replace(/'[^']*'/g, "'…'").replace(/"[^"]*"/g, '"…"');
  return redacted.length > MAX_MESSAGE_CHARACTERS
    ? `${redacted.slice(0, MAX_MESSAGE_CHARACTERS)}…`
    : redacted;
}
