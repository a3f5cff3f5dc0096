import { StoreLockedError } from '../errors.js';
import type { HistoryFormat } from '../import/history-lines.js';
import { findInputFiles } from '../import/input-files.js';
import { type ImportSummary, importHistory } from '../import/run.js';
import type { GlobalOptions } from './admin-request.js';
import { openContext } from './open-context.js';
import { output, printLine } from './output.js';
import { startProgress } from './progress.js';

/** The options of `cds import`. */
export interface ImportFlags {
  format: 'auto' | HistoryFormat;
  tenant?: string;
  workspace?: string;
}

/**
 * The import writes into the store's ingest records, so it holds the store as `cds ingest` does;
 * a serving process would ingest its chunks beside live traffic, but the import could then not
 * tell what was committed, so it is refused.
 */
const WHILE_HELD =
  'cds import needs the store to itself: stop it (collectors go on writing landing files, ingested when it starts again), run cds import, then start it again';

function describe(summary: ImportSummary): string {
  const rate = Math.round(summary.lines / Math.max(summary.seconds, 0.001)).toLocaleString('en');
  const reasons = Object.entries(summary.rejected_by_reason)
    .map(([reason, lines]) => `${reason} ${lines}`)
    .join(', ');
  const parts = [
    `${summary.lines.toLocaleString('en')} lines from ${summary.files} file(s) (${rate} lines/s)`,
    `${summary.stored.toLocaleString('en')} stored`,
    `${summary.duplicates.toLocaleString('en')} duplicates`,
    `${summary.rejected.toLocaleString('en')} rejected${reasons ? ` (${reasons})` : ''}`,
    `${summary.quarantined.toLocaleString('en')} quarantined`,
  ];
  return parts.join(', ');
}

function printSummary(summary: ImportSummary): void {
  printLine(`Imported ${describe(summary)}`);
  if (summary.resumed) {
    printLine(
      `Resumed: ${summary.already_imported.toLocaleString('en')} lines were ingested by an earlier run of this import and skipped`,
    );
  }
  for (const refused of summary.rejected_lines) {
    printLine(`  ${refused.file}:${refused.line}: ${refused.code}: ${refused.message}`);
  }
  const unlisted = summary.rejected - summary.rejected_lines.length;
  if (unlisted > 0) {
    printLine(
      `  and ${unlisted.toLocaleString('en')} more (those ingest refused: cds ingest rejections --tenant T --workspace W)`,
    );
  }
}

/** `cds import <file|dir>`: history through the collector's checks and the landing engine. */
export async function runImport(
  globals: GlobalOptions,
  target: string,
  flags: ImportFlags,
): Promise<void> {
  const files = await findInputFiles(target);
  const context = await openContext({ data_dir: globals.dataDir }, 'existing').catch(
    (error: unknown) => {
      throw error instanceof StoreLockedError ? error.instead(WHILE_HELD) : error;
    },
  );
  const progress = startProgress(
    'import',
    files.reduce((sum, file) => sum + file.bytes, 0),
  );
  let summary: ImportSummary;
  try {
    summary = await importHistory(
      context,
      {
        files,
        format: flags.format,
        target: { tenantId: flags.tenant ?? null, workspaceId: flags.workspace ?? null },
        chunkLines: context.config.max_batch_events,
      },
      {
        chunkDone: ({ inputBytes, lines }) => {
          progress.advance(0, lines);
          progress.reach(inputBytes);
        },
        warn: (line) => progress.say(line),
      },
    );
  } catch (error) {
    progress.stop();
    throw error;
  } finally {
    await context.store.close();
  }
  progress.done(describe(summary));
  output(globals.json, summary, printSummary);
}
