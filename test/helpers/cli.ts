import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const CDS_BIN = fileURLToPath(new URL('../../bin/cds.js', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `cds` as a child process, the way users and scripts do. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CDS_BIN, ...args],
      { env: { ...process.env, ...env } },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

export async function runJson<T = Record<string, unknown>>(args: string[]): Promise<T> {
  const result = await runCli([...args, '--json']);
  if (result.code !== 0)
    throw new Error(`cds ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

export interface ChildServer {
  child: ChildProcess;
  url: string;
  output(): string;
  /** What it wrote to stderr so far. */
  errors(): string;
  stop(): Promise<number | null>;
}

/** Starts a long-running `cds` command and waits until its stdout or its log matches `ready`. */
export function startCli(
  args: string[],
  ready: RegExp,
  timeoutMs = 20_000,
  env: NodeJS.ProcessEnv = {},
): Promise<ChildServer> {
  const child = spawn(process.execPath, [CDS_BIN, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => resolve(code)),
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`cds ${args.join(' ')} did not get ready: ${stdout} ${stderr}`));
    }, timeoutMs);
    let started = false;
    // A daemon announces itself in its log (stderr), a command such as the demo on stdout.
    const checkReady = () => {
      const match = ready.exec(stdout) ?? ready.exec(stderr);
      if (!match || started) return;
      started = true;
      clearTimeout(timer);
      resolve({
        child,
        url: match[1] ?? '',
        output: () => stdout,
        errors: () => stderr,
        stop: async () => {
          if (child.exitCode === null) child.kill('SIGTERM');
          return exited;
        },
      });
    };
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      checkReady();
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      checkReady();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`cds ${args.join(' ')} exited ${code}: ${stderr}`));
    });
  });
}
