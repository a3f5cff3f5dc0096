import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createFileDurablySync,
  replaceFileAtomically,
  writeFileAtomically,
} from '../src/durable-write.js';

describe('durable writes', () => {
  const folder = () => mkdtempSync(join(tmpdir(), 'cds-durable-'));

  it('replaces a file with the new content and the given mode, leaving no temporary file', async () => {
    const dir = folder();
    const path = join(dir, 'registry.json');
    writeFileSync(path, 'old');
    await writeFileAtomically(path, 'new', 0o600);
    expect(readFileSync(path, 'utf8')).toBe('new');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['registry.json']);
  });

  it('keeps the old file and removes the temporary one when writing fails', async () => {
    const dir = folder();
    const path = join(dir, 'manifest.json');
    writeFileSync(path, 'old');
    await expect(
      replaceFileAtomically(path, async (temporary) => {
        await writeFile(temporary, 'half');
        throw new Error('disk full');
      }),
    ).rejects.toThrow('disk full');
    expect(readFileSync(path, 'utf8')).toBe('old');
    expect(readdirSync(dir)).toEqual(['manifest.json']);
  });

  it('creates a file only when it does not exist yet', () => {
    const dir = folder();
    const path = join(dir, 'master.key');
    createFileDurablySync(path, Buffer.from('first'), 0o600);
    expect(() => createFileDurablySync(path, Buffer.from('second'), 0o600)).toThrow(
      expect.objectContaining({ code: 'EEXIST' }),
    );
    expect(readFileSync(path, 'utf8')).toBe('first');
  });
});
