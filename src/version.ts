import { readFileSync } from 'node:fs';

let version: string | undefined;

/** This build's version: `package.json` is one level above `src/` and `dist/` alike. */
export function cdsVersion(): string {
  version ??= (
    JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    }
  ).version;
  return version;
}
