import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function folderWithPackageJson(start: string): string {
  let folder = start;
  while (!existsSync(join(folder, 'package.json'))) {
    const parent = dirname(folder);
    if (parent === folder) throw new Error(`cds: no package.json in ${start} or above it`);
    folder = parent;
  }
  return folder;
}

/**
 * The folder of cds's own `package.json`, which holds `sql/`, `dist/` and the version. Found by
 * walking up, because this module runs at a different depth from `src/` (the tests), `dist/` and
 * the bundle (`dist/bundle/`, in whichever chunk esbuild put it).
 */
export const PACKAGE_ROOT = folderWithPackageJson(dirname(fileURLToPath(import.meta.url)));
