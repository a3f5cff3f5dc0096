import type { Logger, LoggerOptions, pino as Pino } from 'pino';
import type { PrettyOptions, PrettyStream } from 'pino-pretty';
import { ConfigError } from '../errors.js';
import { requirePackage } from '../require-package.js';

/**
 * pino-pretty is loaded only for a terminal: every service and every CLI run with its output
 * piped or logged would pay its load time for nothing.
 */
function prettyStream(options: PrettyOptions): PrettyStream {
  const pretty = requirePackage<(options: PrettyOptions) => PrettyStream>('pino-pretty');
  return pretty(options);
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
type Level = (typeof LEVELS)[number];

/**
 * Field names whose values are secrets or identifiers wherever they appear in a record: a
 * component that logs a request, a token row or an error's details by mistake still writes no
 * token and no email (docs/decisions.md "No secrets or identifiers in logs").
 */
const REDACTED = [
  'token',
  'secret',
  'authorization',
  'email',
  'phone',
  'identifiers',
  '*.token',
  '*.secret',
  '*.authorization',
  '*.email',
  '*.phone',
  '*.identifiers',
  'req.headers.authorization',
  'req.headers.cookie',
];

function levelOf(setting: string | undefined): Level {
  if (setting === undefined || setting === '') return 'info';
  const level = LEVELS.find((known) => known === setting.toLowerCase());
  if (!level) throw new ConfigError('CDS_LOG_LEVEL', `must be one of ${LEVELS.join(', ')}`);
  return level;
}

function createRoot(): Logger {
  // pino loads with the first record: `cds --version` and `--help` log nothing.
  const pino = requirePackage<typeof Pino>('pino');
  const options: LoggerOptions = {
    level: levelOf(process.env.CDS_LOG_LEVEL),
    base: { pid: process.pid },
    redact: { paths: REDACTED, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  // Synchronous writes: a record logged just before the process exits is not lost, and records
  // keep their order with the CLI's own lines on the same stderr.
  if (process.stderr.isTTY) {
    return pino(
      options,
      prettyStream({
        destination: 2,
        sync: true,
        ignore: 'pid,hostname,component',
        translateTime: 'SYS:HH:MM:ss',
        messageFormat: '{if component}{component}: {end}{msg}',
      }),
    );
  }
  return pino(options, pino.destination({ fd: 2, sync: true }));
}

let root: Logger | undefined;

/**
 * The process's one log: every component writes to stderr through it, JSON lines when stderr is
 * not a terminal, readable lines when it is; `CDS_LOG_LEVEL` sets the level (info by default).
 */
export function rootLog(): Logger {
  root ??= createRoot();
  return root;
}

/** A component's log: its records carry `component` so one stream can be filtered by part. */
export function componentLog(component: string): Logger {
  return rootLog().child({ component });
}

/** Checks `CDS_LOG_LEVEL` before a command runs, so a bad level is a one-line config error. */
export function checkLogLevel(): void {
  levelOf(process.env.CDS_LOG_LEVEL);
}
