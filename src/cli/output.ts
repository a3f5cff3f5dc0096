/** Prints rows as an aligned table for people. */
export function printTable(rows: Record<string, unknown>[], columns: string[]): void {
  if (rows.length === 0) {
    process.stdout.write('(none)\n');
    return;
  }
  const cell = (value: unknown): string =>
    value === null || value === undefined
      ? '-'
      : typeof value === 'object'
        ? JSON.stringify(value)
        : String(value);
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

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** `--json` prints the API's answer as it is; otherwise `human` renders it. */
export function output<T>(json: boolean | undefined, value: T, human: (value: T) => void): void {
  if (json) printJson(value);
  else human(value);
}

/** Tells how to ask for the next page of a listing, when there is one. */
export function printNextPage(nextCursor: string | null): void {
  if (nextCursor) process.stdout.write(`next page: --cursor ${nextCursor}\n`);
}
