import type { BusMessage } from '../bus/publisher.js';
import { chunkMessageId, eventSubject } from '../bus/subjects.js';
import { type LandingLine, utf8Concat } from './landing-writer.js';

/**
 * The most bytes one message carries: a request's lines for one workspace are cut into messages of
 * at most this (one line always fits: an event is at most 32 KiB), well inside the stream's
 * `max_msg_size` (bus/setup.ts) and the servers' 1 MB `max_payload`.
 */
export const MAX_CHUNK_BYTES = 256 * 1024;

/**
 * A request's accepted lines as messages of the events stream (docs/cluster-design.md §3), one
 * per request chunk: the NDJSON a landing file would get, for one tenant and workspace, in the
 * order the request had them. Its subject carries the tenant and workspace as tokens, and its
 * msgID is named by its events' ids, so a copy published again is dropped by the stream.
 */
export function busMessagesOf(lines: readonly LandingLine[]): BusMessage[] {
  const byWorkspace = new Map<string, LandingLine[]>();
  for (const line of lines) {
    const key = JSON.stringify([line.tenantId, line.workspaceId]);
    const group = byWorkspace.get(key);
    if (group) group.push(line);
    else byWorkspace.set(key, [line]);
  }
  const messages: BusMessage[] = [];
  for (const group of byWorkspace.values()) {
    let chunk: LandingLine[] = [];
    let bytes = 0;
    for (const line of group) {
      const size = Buffer.byteLength(line.text);
      if (chunk.length > 0 && bytes + size > MAX_CHUNK_BYTES) {
        messages.push(chunkMessage(chunk));
        chunk = [];
        bytes = 0;
      }
      chunk.push(line);
      bytes += size;
    }
    if (chunk.length > 0) messages.push(chunkMessage(chunk));
  }
  return messages;
}

function chunkMessage(lines: LandingLine[]): BusMessage {
  const { tenantId, workspaceId } = lines[0] as LandingLine;
  return {
    subject: eventSubject(tenantId, workspaceId),
    msgID: chunkMessageId(
      tenantId,
      workspaceId,
      lines.map((line) => line.eventId),
    ),
    // Bytes, encoded where the request was checked: a worker thread hands them over whole.
    data: utf8Concat(lines.map((line) => line.text)),
  };
}
