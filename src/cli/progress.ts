import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import ora, { type Ora } from 'ora';
import { escapeControls } from './output.js';

/** How a long command says how far it got, on stderr, so stdout stays the answer. */
export interface Progress {
  /** `bytes` more of the total are done, and `events` more events when the work counts them. */
  advance(bytes: number, events?: number): void;
  /** The bytes done so far, for work measured from outside (a file being written). */
  reach(bytes: number): void;
  /** A line of its own (a warning), without breaking the progress line. */
  say(line: string): void;
  /** The work is over: the last line says `summary`. */
  done(summary: string): void;
  /** The work failed: the line goes, so the error said next stands alone; `done` after is a no-op. */
  stop(): void;
}

export interface ProgressOptions {
  /** An ora line redrawn in place; otherwise plain lines. Default: whether stderr is a terminal. */
  interactive?: boolean;
  /** Plain lines: one each time another tenth of the total is done… */
  plainStepPercent?: number;
  /** …or once this long has passed since the last line, if anything was done meanwhile. */
  plainEveryMs?: number;
  /**
   * Where plain lines go (default: stderr as they are). A daemon gives its log, so that off a
   * terminal every line it writes is a record a log shipper can read.
   */
  plainLine?: (line: string) => void;
}

const PLAIN_STEP_PERCENT = 10;
const PLAIN_EVERY_MS = 5_000;
/** Rates before this much time has passed say little, and a time left from them less. */
const MIN_RATE_SECONDS = 0.5;

const MIB = 1024 * 1024;

function sizeText(bytes: number): string {
  return bytes >= MIB ? `${(bytes / MIB).toFixed(1)} MiB` : `${Math.ceil(bytes / 1024)} KiB`;
}

function durationText(seconds: number): string {
  const whole = Math.max(0, Math.round(seconds));
  const minutes = Math.floor(whole / 60);
  return minutes > 0 ? `${minutes}m ${String(whole % 60).padStart(2, '0')}s` : `${whole}s`;
}

/**
 * Starts saying the progress of `label` over `totalBytes` (null when the total is unknown, as for
 * a watching ingest or a server's file it cannot see): percent, events/s (or MiB/s when the work
 * counts no events) and the time left at that pace. On a terminal an ora line is redrawn in place;
 * otherwise plain lines, each tenth of the total or every few seconds, for logs.
 */
export function startProgress(
  label: string,
  totalBytes: number | null,
  options: ProgressOptions = {},
): Progress {
  // A terminal that reports no width (a pseudo-terminal nobody sized) sent ora's line count to
  // Infinity, and its clearing never ended: plain lines there.
  const interactive =
    options.interactive ?? (process.stderr.isTTY === true && (process.stderr.columns ?? 0) > 0);
  const stepPercent = options.plainStepPercent ?? PLAIN_STEP_PERCENT;
  const everyMs = options.plainEveryMs ?? PLAIN_EVERY_MS;
  const startedAt = performance.now();
  let bytesDone = 0;
  let events = 0;
  let countsEvents = false;
  let lastLineAt = startedAt;
  let lastLineStep = 0;
  let lastLineBytes = 0;
  let finished = false;

  const percent = () =>
    totalBytes && totalBytes > 0 ? Math.min(100, (bytesDone / totalBytes) * 100) : null;

  const describe = (): string => {
    const seconds = (performance.now() - startedAt) / 1000;
    const parts: string[] = [];
    const done = percent();
    parts.push(
      done === null
        ? sizeText(bytesDone)
        : `${Math.floor(done)}% (${sizeText(bytesDone)} of ${sizeText(totalBytes as number)})`,
    );
    if (countsEvents) parts.push(`${events.toLocaleString('en')} events`);
    if (seconds >= MIN_RATE_SECONDS) {
      parts.push(
        countsEvents
          ? `${Math.round(events / seconds).toLocaleString('en')} events/s`
          : `${sizeText(bytesDone / seconds)}/s`,
      );
      if (done !== null && bytesDone > 0 && done < 100) {
        const left = (seconds * ((totalBytes as number) - bytesDone)) / bytesDone;
        parts.push(`about ${durationText(left)} left`);
      }
    }
    return `${label} ${parts.join(', ')}`;
  };

  const spinner: Ora | null = interactive
    ? ora({ text: escapeControls(`${label}…`), stream: process.stderr }).start()
    : null;

  const writeLine =
    options.plainLine ?? ((line: string) => process.stderr.write(`${escapeControls(line)}\n`));

  const maybePlainLine = () => {
    const now = performance.now();
    const done = percent();
    const step = done === null ? 0 : Math.floor(done / stepPercent);
    const stepped = done !== null && step > lastLineStep;
    const waited = now - lastLineAt >= everyMs && bytesDone > lastLineBytes;
    if (!stepped && !waited) return;
    lastLineAt = now;
    lastLineStep = step;
    lastLineBytes = bytesDone;
    writeLine(describe());
  };

  const changed = () => {
    if (finished) return;
    if (spinner) spinner.text = escapeControls(describe());
    else maybePlainLine();
  };

  return {
    advance(bytes, more) {
      bytesDone += bytes;
      if (more !== undefined) {
        countsEvents = true;
        events += more;
      }
      changed();
    },
    reach(bytes) {
      bytesDone = Math.max(bytesDone, bytes);
      changed();
    },
    say(line) {
      if (spinner) {
        spinner.clear();
        writeLine(line);
        spinner.render();
      } else writeLine(line);
    },
    done(summary) {
      if (finished) return;
      finished = true;
      const seconds = (performance.now() - startedAt) / 1000;
      const line = `${label} done in ${durationText(seconds)}: ${summary}`;
      if (spinner) spinner.stopAndPersist({ symbol: '✔', text: escapeControls(line) });
      else writeLine(line);
    },
    stop() {
      finished = true;
      spinner?.stop();
    },
  };
}

/** How often a file being written is measured. */
const FOLLOW_EVERY_MS = 250;

/**
 * Reports the size of the file at `path` as the work done while another part of the process (or
 * the server, on this machine) writes it; the file may not exist yet, or ever. Answers `stop`.
 */
export function followFile(progress: Progress, path: string): () => void {
  let measuring = false;
  const timer = setInterval(() => {
    if (measuring) return;
    measuring = true;
    stat(path)
      .then((info) => progress.reach(info.size))
      .catch(() => undefined)
      .finally(() => {
        measuring = false;
      });
  }, FOLLOW_EVERY_MS);
  return () => clearInterval(timer);
}

async function bytesUnder(path: string): Promise<number> {
  const entries = await readdir(path, { recursive: true, withFileTypes: true });
  const sizes = await Promise.all(
    entries
      .filter((entry) => entry.isFile())
      .map((entry) =>
        stat(join(entry.parentPath, entry.name)).then(
          (info) => info.size,
          () => 0,
        ),
      ),
  );
  return sizes.reduce((sum, size) => sum + size, 0);
}

/**
 * Reports the bytes of the files in the folders of `parent` whose names start with `prefix`: the
 * private folder an export writes before renaming it into place. Answers `stop`.
 */
export function followFolders(progress: Progress, parent: string, prefix: string): () => void {
  let measuring = false;
  const timer = setInterval(() => {
    if (measuring) return;
    measuring = true;
    readdir(parent)
      .then(async (names) => {
        const folders = names.filter((name) => name.startsWith(prefix));
        const sizes = await Promise.all(
          folders.map((name) => bytesUnder(join(parent, name)).catch(() => 0)),
        );
        progress.reach(sizes.reduce((sum, size) => sum + size, 0));
      })
      .catch(() => undefined)
      .finally(() => {
        measuring = false;
      });
  }, FOLLOW_EVERY_MS);
  return () => clearInterval(timer);
}

/**
 * Runs `work` while a follower (`followFile`, `followFolders`) reports its progress, and stops
 * the follower after; a failure also stops the line, so the error is said on a clean one.
 */
export async function whileFollowing<T>(
  progress: Progress,
  stopFollowing: () => void,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    progress.stop();
    throw error;
  } finally {
    stopFollowing();
  }
}

/** `events 120, profiles 40`: the rows a snapshot or an export wrote, by table. */
export function rowCounts(rows: Record<string, number>): string {
  return Object.entries(rows)
    .map(([table, count]) => `${table} ${count}`)
    .join(', ');
}
