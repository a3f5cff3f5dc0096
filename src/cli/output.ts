/**
 * What a terminal acts on instead of showing: C0 and C1 controls, DEL, the Unicode bidi controls
 * (which reorder the text after them) and the line and paragraph separators. A tenant's token name
 * holding `\x1b]…` or `\u202e` must not rewrite the operator's screen.
 */
const TERMINAL_CONTROLS =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** The same, less what JSON.stringify escapes already (C0). */
const JSON_UNESCAPED_CONTROLS =
  /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function hex(character: string, digits: number): string {
  return (character.codePointAt(0) ?? 0).toString(16).padStart(digits, '0');
}

/** Shows every terminal control as a visible escape: `\x1b`, `\x9b`, `\u202e`. */
export function escapeControls(text: string): string {
  return text.replace(TERMINAL_CONTROLS, (character) =>
    character <= '\u00ff' ? `\\x${hex(character, 2)}` : `\\u${hex(character, 4)}`,
  );
}

/** One line to stdout for people; whatever it quotes is shown, never acted on. */
export function printLine(text: string): void {
  process.stdout.write(`${escapeControls(text)}\n`);
}

/** One line to stderr, the same way. */
export function printErrorLine(text: string): void {
  process.stderr.write(`${escapeControls(text)}\n`);
}

/** Prints rows as an aligned table for people. */
export function printTable(rows: Record<string, unknown>[], columns: string[]): void {
  if (rows.length === 0) {
    process.stdout.write('(none)\n');
    return;
  }
  const cell = (value: unknown): string =>
    value === null || value === undefined
      ? '-'
      : escapeControls(typeof value === 'object' ? JSON.stringify(value) : String(value));
  const widths = columns.map((column) =>
    Math.max(column.length, ...rows.map((row) => cell(row[column]).length)),
  );
  const line = (cells: string[]): string =>
    cells
      .map((text, index) => text.padEnd(widths[index] ?? 0))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${line(columns.map((column) => column.toUpperCase()))}\n`);
  for (const row of rows)
    process.stdout.write(`${line(columns.map((column) => cell(row[column])))}\n`);
}

/**
 * JSON.stringify escapes C0 controls but leaves DEL, C1 and the bidi controls as they are; they
 * are written as `\uXXXX` too, which parses back to the same value.
 */
export function printJson(value: unknown): void {
  const text = JSON.stringify(value, null, 2).replace(
    JSON_UNESCAPED_CONTROLS,
    (character) => `\\u${hex(character, 4)}`,
  );
  process.stdout.write(`${text}\n`);
}

/** `--json` prints the API's answer as it is; otherwise `human` renders it. */
export function output<T>(json: boolean | undefined, value: T, human: (value: T) => void): void {
  if (json) printJson(value);
  else human(value);
}

/** Tells how to ask for the next page of a listing, when there is one. */
export function printNextPage(nextCursor: string | null): void {
  if (nextCursor) printLine(`next page: --cursor ${nextCursor}`);
}
