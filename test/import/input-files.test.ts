import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { findInputFiles, type InputLine, readLines } from '../../src/import/input-files.js';
import { tempDir } from '../helpers/temp-dirs.js';

async function allLines(path: string): Promise<InputLine[]> {
  const lines: InputLine[] = [];
  for await (const batch of readLines(path)) lines.push(...batch);
  return lines;
}

describe('reading history files', () => {
  it('numbers lines and gives each its offset, passing over empty ones and \\r', async () => {
    const path = join(tempDir(), 'h.ndjson');
    writeFileSync(path, '{"a":1}\r\n\n{"b":2}\n{"c":3}');
    expect(await allLines(path)).toEqual([
      { text: '{"a":1}', offset: 0, number: 1, fileBytes: 0 },
      { text: '{"b":2}', offset: 10, number: 3, fileBytes: 10 },
      { text: '{"c":3}', offset: 18, number: 4, fileBytes: 18 },
    ]);
  });

  it('reads gzip by its first bytes, with offsets in the decompressed lines', async () => {
    const path = join(tempDir(), 'export-without-suffix');
    const gzipped = gzipSync('{"a":1}\n{"b":2}\n');
    writeFileSync(path, gzipped);
    // Progress measures the file on disk: the compressed bytes read so far.
    expect(await allLines(path)).toEqual([
      { text: '{"a":1}', offset: 0, number: 1, fileBytes: gzipped.length },
      { text: '{"b":2}', offset: 8, number: 2, fileBytes: gzipped.length },
    ]);
  });

  it('skips a line longer than 1 MiB unread, and goes on after it', async () => {
    const path = join(tempDir(), 'h.ndjson');
    const long = 'x'.repeat(3 * 1024 * 1024);
    writeFileSync(path, `{"a":1}\n${long}\n{"b":2}\n${long}`);
    expect(await allLines(path)).toEqual([
      { text: '{"a":1}', offset: 0, number: 1, fileBytes: 0 },
      { text: null, offset: 8, number: 2, fileBytes: 8 },
      { text: '{"b":2}', offset: 8 + long.length + 1, number: 3, fileBytes: 8 + long.length + 1 },
      { text: null, offset: 8 + long.length + 9, number: 4, fileBytes: 8 + long.length + 9 },
    ]);
  });

  it('takes from a folder the NDJSON and gzip files in path order, hidden ones left out', async () => {
    const root = tempDir();
    mkdirSync(join(root, 'b'));
    mkdirSync(join(root, '.cache'));
    for (const name of [
      'b/2.jsonl',
      'a.ndjson',
      'b/1700000000.d1e2.gz',
      'c.json.gz',
      'notes.txt',
      '.hidden.ndjson',
      '.cache/x.ndjson',
    ]) {
      writeFileSync(join(root, name), '');
    }
    expect((await findInputFiles(root)).map((file) => file.path.slice(root.length + 1))).toEqual([
      'a.ndjson',
      'b/1700000000.d1e2.gz',
      'b/2.jsonl',
      'c.json.gz',
    ]);
  });
});
