import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { CDS_BIN, prepareDataDir, TENANT } from './setup.js';

const ROUNDS = Number(process.env.BENCH_CLI_ROUNDS ?? 15);

interface Subject {
  name: string;
  args: string[];
}

interface Timing {
  wallMs: number;
  cpuMs: number;
}

/**
 * Wall time of one child process, start to exit, and the CPU time it used (user + system, from
 * /usr/bin/time, which every subject runs under alike): on a machine other work loads, the CPU
 * time says more than the wall time. A failure stops the bench.
 */
function timed(args: string[]): Timing {
  const started = performance.now();
  const run = spawnSync('/usr/bin/time', ['-f', 'CPU %U %S', process.execPath, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const wallMs = performance.now() - started;
  const stderr = run.stderr.toString();
  const cpu = /CPU ([\d.]+) ([\d.]+)/.exec(stderr);
  if (run.status !== 0 || !cpu) {
    throw new Error(`node ${args.join(' ')} exited ${run.status}: ${stderr}`);
  }
  return { wallMs, cpuMs: (Number(cpu[1]) + Number(cpu[2])) * 1000 };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

function cdsSubjects(label: string, bin: string, dataDir: string): Subject[] {
  return [
    { name: `${label} --version`, args: [bin, '--version'] },
    { name: `${label} --help`, args: [bin, '--help'] },
    {
      name: `${label} tokens list`,
      args: [bin, '--data-dir', dataDir, 'tokens', 'list', '-t', TENANT],
    },
  ];
}

/**
 * `npm run bench -- cli`: the start-up of the CLI beside bare node, in one run. Every round runs
 * each subject once, in the same order, so that the machine's load drifting over the run falls on
 * all of them; the medians are compared, of wall time (what a user waits) and of CPU time. `BENCH_CLI_BEFORE=<checkout>` adds the same commands of
 * another built checkout (e.g. main before the lazy loading), on the same data dir.
 */
export async function benchCli(): Promise<void> {
  const before = process.env.BENCH_CLI_BEFORE;
  const beforeBin = before ? resolve(before, 'bin/cds.js') : null;
  if (beforeBin && !existsSync(beforeBin)) throw new Error(`${beforeBin} does not exist`);
  console.log(`\n## cli: start-up, median of ${ROUNDS} rounds`);
  const { dir } = await prepareDataDir();
  const subjects: Subject[] = [
    { name: 'node -e 0', args: ['-e', '0'] },
    ...cdsSubjects('cds', CDS_BIN, dir),
    ...(beforeBin ? cdsSubjects('before', beforeBin, dir) : []),
  ];
  // One round unmeasured: the first run of each reads its files from disk, the others from cache.
  for (const subject of subjects) timed(subject.args);
  const timings = new Map(subjects.map((subject) => [subject.name, [] as Timing[]]));
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const subject of subjects) timings.get(subject.name)?.push(timed(subject.args));
  }
  const wall = (name: string) => median((timings.get(name) ?? []).map((timing) => timing.wallMs));
  const cpu = (name: string) => median((timings.get(name) ?? []).map((timing) => timing.cpuMs));
  const bare = 'node -e 0';
  console.log(
    `${'command'.padEnd(20)} ${'wall'.padStart(8)} ${'× node'.padStart(7)} ${'cpu'.padStart(8)} ${'× node'.padStart(7)}`,
  );
  for (const { name } of subjects) {
    console.log(
      [
        name.padEnd(20),
        `${wall(name).toFixed(0)} ms`.padStart(8),
        (wall(name) / wall(bare)).toFixed(2).padStart(7),
        `${cpu(name).toFixed(0)} ms`.padStart(8),
        (cpu(name) / cpu(bare)).toFixed(2).padStart(7),
      ].join(' '),
    );
  }
  if (beforeBin) {
    for (const command of ['--version', '--help', 'tokens list']) {
      const [now, then] = [`cds ${command}`, `before ${command}`];
      console.log(
        `cds ${command} against before: wall ${(wall(now) / wall(then)).toFixed(2)}, cpu ${(cpu(now) / cpu(then)).toFixed(2)}`,
      );
    }
  }
}
