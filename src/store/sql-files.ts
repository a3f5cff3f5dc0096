import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MissingStatementError } from '../errors.js';
import { PACKAGE_ROOT } from '../package-root.js';

/** `sql/` at the package root. */
export const SQL_DIR = join(PACKAGE_ROOT, 'sql');

const NAME_MARKER = /\/\*\s*@name\s+([a-z0-9_]+)\s*\*\//g;

function parseNamedStatements(fileName: string, text: string, into: Map<string, string>): void {
  const markers = [...text.matchAll(NAME_MARKER)];
  markers.forEach((marker, index) => {
    const name = marker[1] as string;
    const start = (marker.index ?? 0) + marker[0].length;
    const end = markers[index + 1]?.index ?? text.length;
    const body = text.slice(start, end).trim().replace(/;\s*$/, '');
    if (into.has(name)) throw new Error(`SQL statement ${name} is defined twice (${fileName})`);
    into.set(name, body);
  });
}

function loadStatements(): Map<string, string> {
  const statements = new Map<string, string>();
  for (const fileName of readdirSync(SQL_DIR).sort()) {
    if (!fileName.endsWith('.sql')) continue;
    parseNamedStatements(fileName, readFileSync(join(SQL_DIR, fileName), 'utf8'), statements);
  }
  return statements;
}

let statements: Map<string, string> | undefined;

/** The text of a named statement (`/* @name foo *\/`) from the files in `sql/`. */
export function sql(name: string): string {
  statements ??= loadStatements();
  const text = statements.get(name);
  if (text === undefined) throw new MissingStatementError(name, SQL_DIR);
  return text;
}

/** Puts fragments (compiled predicates, chosen statements) into the `{{name}}` slots of a statement from `sql/`. */
export function fillSlots(template: string, fragments: Record<string, string>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    const fragment = fragments[name];
    if (fragment === undefined) throw new Error(`no fragment for SQL slot {{${name}}}`);
    return fragment;
  });
}

export interface Migration {
  version: number;
  name: string;
  text: string;
}

/** Numbered migrations (`sql/migrations/001_init.sql`), in order. */
export function migrations(): Migration[] {
  const dir = join(SQL_DIR, 'migrations');
  return readdirSync(dir)
    .filter((fileName) => /^\d+_.+\.sql$/.test(fileName))
    .sort()
    .map((fileName) => ({
      version: Number.parseInt(fileName, 10),
      name: fileName.replace(/\.sql$/, ''),
      text: readFileSync(join(dir, fileName), 'utf8'),
    }));
}

/**
 * A value as a SQL string literal, for ATTACH and SET, which take no bound parameter. Only paths the
 * process makes itself and settings its config schema checked go through it, never user input.
 */
export function sqlStringLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
