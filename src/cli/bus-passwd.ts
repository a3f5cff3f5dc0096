import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { hashBusPassword } from '../bus/passwords.js';
import { ConfigError } from '../errors.js';
import type { GlobalOptions } from './admin-request.js';
import { output, printLine } from './output.js';

export interface BusPasswdFlags {
  cost: number;
}

/** Typed twice at a terminal, echoing nothing, as `nats server passwd` asks. */
async function prompted(): Promise<string> {
  const silent = new Writable({ write: (_chunk, _encoding, done) => done() });
  const reader = createInterface({ input: process.stdin, output: silent, terminal: true });
  // Lines are queued as they come, so a line typed ahead of its prompt is not lost.
  const lines = reader[Symbol.asyncIterator]();
  const ask = async (prompt: string) => {
    process.stderr.write(prompt);
    const line = await lines.next();
    process.stderr.write('\n');
    if (line.done) throw new ConfigError('password', 'none was typed');
    return line.value;
  };
  try {
    const first = await ask('password: ');
    if (first !== (await ask('again: ')))
      throw new ConfigError('password', 'the two entries differ');
    return first;
  } finally {
    reader.close();
  }
}

/** Piped in: everything read, less one trailing newline (`echo`, a file). */
async function piped(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/**
 * `cds bus passwd`: the bcrypt hash of a password for a node's configuration (`cds bus config
 * --collector-hash …`), the password read from stdin so it never shows in a process list.
 */
export async function runBusPasswd(globals: GlobalOptions, flags: BusPasswdFlags): Promise<void> {
  const password = process.stdin.isTTY ? await prompted() : await piped();
  const hash = await hashBusPassword(password, flags.cost);
  output(globals.json, { hash }, (value) => printLine(value.hash));
}
