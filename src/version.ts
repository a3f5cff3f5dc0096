import { readFileSync } from 'node:fs';

let version: string | undefined;

/** This build's version: `package.json` is one level up from `src/` and `dist/` alike. */
export function packageVersion(): string {
  version ??= (
    JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    }
  ).version;
  return version;
}
