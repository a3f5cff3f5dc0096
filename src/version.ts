import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from './package-root.js';

let version: string | undefined;

/** This build's version, from its `package.json`. */
export function packageVersion(): string {
  version ??= (
    JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;
  return version;
}
