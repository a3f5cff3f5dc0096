import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { splitSealedFile } from '../../src/ingest/split-file.js';
import { tempDir } from '../helpers/temp-dirs.js';

const lines = (count: number) =>
  Array.from(
    { length: count },
    (_, index) => `{"line":${index},"pad":"${'x'.repeat(index % 7)}"}\n`,
  );

function landingFile(content: string): { dir: string; path: string } {
  const dir = tempDir();
  const path = join(dir, 'c1-00000001.ndjson');
  writeFileSync(path, content);
  return { dir, path };
}

/** The folder's files in path order (ingest's order), with their text. */
function filesIn(dir: string): { name: string; text: string }[] {
  return readdirSync(dir)
    .sort()
    .map((name) => ({ name, text: readFileSync(join(dir, name), 'utf8') }));
}

describe('splitting a sealed landing file', () => {
  it('cuts it into parts of equal line counts, in order, that sort where it did', async () => {
    const content = lines(10).join('');
    const { dir, path } = landingFile(content);
    writeFileSync(join(dir, 'c1-00000002.ndjson'), 'next\n');

    expect(await splitSealedFile(path, 3)).toBe(4);
    const files = filesIn(dir);
    expect(files.map((file) => file.name)).toEqual([
      'c1-00000001.p000001.ndjson',
      'c1-00000001.p000002.ndjson',
      'c1-00000001.p000003.ndjson',
      'c1-00000001.p000004.ndjson',
      'c1-00000002.ndjson',
    ]);
    const parts = files.slice(0, 4).map((file) => file.text);
    expect(parts.map((part) => part.split('\n').length - 1)).toEqual([3, 3, 3, 1]);
    expect(parts.join('')).toBe(content);
  });

  it('leaves a file of at most maxLines lines whole, a last line without newline included', async () => {
    const content = `${lines(3).join('')}{"line":3}`;
    const { dir, path } = landingFile(content);
    expect(await splitSealedFile(path, 4)).toBe(0);
    expect(readFileSync(path, 'utf8')).toBe(content);
    expect(await splitSealedFile(path, 2)).toBe(2);
    expect(
      filesIn(dir)
        .map((file) => file.text)
        .join(''),
    ).toBe(content);
  });

  it('splits again, into the same parts, after a split that was cut off before removing the file', async () => {
    const content = lines(9).join('');
    const { dir, path } = landingFile(content);
    // What a crash can leave: one part renamed already, one half-written under its working name.
    writeFileSync(join(dir, 'c1-00000001.p000001.ndjson'), lines(3).join(''));
    writeFileSync(join(dir, 'c1-00000001.p000002.ndjson.splitting'), '{"line":3');

    expect(await splitSealedFile(path, 3)).toBe(3);
    const files = filesIn(dir);
    expect(files.map((file) => file.name)).toEqual([
      'c1-00000001.p000001.ndjson',
      'c1-00000001.p000002.ndjson',
      'c1-00000001.p000003.ndjson',
    ]);
    expect(files.map((file) => file.text).join('')).toBe(content);
  });

  it('fails and keeps the file whole when the disk cuts a part short', async () => {
    const content = lines(6000).join('');
    const { dir, path } = landingFile(content);
    const splitFile = fileURLToPath(new URL('../../dist/ingest/split-file.js', import.meta.url));
    // A file-size limit of 32 KiB with SIGXFSZ ignored cuts the first part's writes short, as a
    // full disk would; the split runs in a child process so the limit stays there.
    const script = `const { splitSealedFile } = await import(${JSON.stringify(splitFile)});
      await splitSealedFile(${JSON.stringify(path)}, 3000);`;
    const result = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        'bash',
        [
          '-c',
          `trap '' XFSZ; ulimit -f 32; exec "$0" "$@"`,
          process.execPath,
          '--input-type=module',
          '-e',
          script,
        ],
        (error, _stdout, stderr) => resolve({ code: error ? 1 : 0, stderr }),
      );
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /c1-00000001\.p000001\.ndjson\.splitting: wrote \d+ of \d+ bytes|EFBIG/,
    );
    expect(filesIn(dir).filter((file) => file.name.endsWith('.ndjson'))).toEqual([
      { name: 'c1-00000001.ndjson', text: content },
    ]);
  });
});
