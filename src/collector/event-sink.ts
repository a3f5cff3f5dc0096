import type { BoxingKey } from '../bus/identifier-box.js';
import type { BusMessage } from '../bus/publisher.js';
import type { IntakeScope } from './accept.js';
import { busMessagesOf } from './bus-messages.js';
import {
  encodeLines,
  type LandingChunk,
  type LandingLine,
  type LandingWriter,
} from './landing-writer.js';

/**
 * How a sink takes accepted lines, encoded where they were checked (on the worker thread that
 * checked a large batch, off the request thread): landing files as one chunk per partition, the
 * bus as one message per request chunk (collector/bus-messages.ts).
 */
export type SinkForm = 'chunks' | 'messages';

export type AcceptedLines =
  | { form: 'chunks'; chunks: LandingChunk[] }
  | { form: 'messages'; messages: BusMessage[] };

export function acceptedAs(form: SinkForm, lines: LandingLine[]): AcceptedLines {
  return form === 'chunks'
    ? { form, chunks: encodeLines(lines) }
    : { form, messages: busMessagesOf(lines) };
}

/**
 * Where the collector puts the events it accepted: landing files (the embedded default) or the
 * events stream (cluster mode). `append` resolves once they are durable there, and only then is
 * the client answered.
 */
export interface EventSink {
  /** Stamped on every line, so a line tells which collector took it. */
  readonly collectorId: string;
  readonly form: SinkForm;
  append(accepted: AcceptedLines): Promise<void>;
  close(): Promise<void>;
  /**
   * The key identifiers are boxed to before their lines reach this sink; absent where they may
   * be written plain (landing files). Throws when the sink needs one and has none yet.
   */
  boxingKey?(): BoxingKey;
}

/** A request's scope as its events are checked for this sink: with its boxing key, if any. */
export function scopeFor<S extends IntakeScope>(sink: EventSink, scope: S): S {
  return sink.boxingKey ? { ...scope, box: sink.boxingKey() } : scope;
}

/** The landing files of the data dir (design §2). */
export function landingSink(writer: LandingWriter): EventSink {
  return {
    collectorId: writer.collectorId,
    form: 'chunks',
    append: (accepted) =>
      accepted.form === 'chunks'
        ? writer.append(accepted.chunks)
        : Promise.reject(new Error('landing files take chunks, not bus messages')),
    close: () => writer.close(),
  };
}
