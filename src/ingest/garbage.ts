import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let collect: (() => void) | undefined;

/**
 * A full V8 collection, now. Resolving a large batch parses and builds a few hundred MiB of
 * objects that are garbage once its outcome is appended, but V8 lets its heap grow well past
 * them before collecting, so they would sit beside DuckDB's peak for the rest of the batch
 * (5M-event backlog: 290 MiB of heap at the peak, 40 MiB after this). `gc` is reachable only
 * with --expose-gc, which a flag set at run time grants to new contexts.
 */
export function collectGarbage(): void {
  if (!collect) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  collect();
}
