import { session } from './session.js';

/** One message of a server-sent event stream. */
export interface StreamMessage {
  id: string | null;
  event: string;
  data: string;
}

/**
 * Reads a `text/event-stream` with `fetch`, which can send the token in the Authorization header
 * (the browser's EventSource cannot, and a token in the URL would end up in logs and history).
 * Calls `onMessage` for each message until `signal` aborts or the server ends the stream; then
 * resolves with the last id seen, for a `Last-Event-ID` to resume from.
 */
export async function readEventStream(
  path: string,
  lastEventId: string | null,
  signal: AbortSignal,
  onMessage: (message: StreamMessage) => void,
): Promise<string | null> {
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  const token = session.token.value;
  if (token) headers.authorization = `Bearer ${token}`;
  if (lastEventId) headers['last-event-id'] = lastEventId;
  const response = await fetch(path, { headers, signal });
  if (!response.ok || !response.body) throw new Error(`the live feed answered ${response.status}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let last = lastEventId;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return last;
    buffer += value;
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      const message: StreamMessage = { id: null, event: 'message', data: '' };
      const data: string[] = [];
      for (const line of block.split('\n')) {
        // A line starting with ':' is a comment (the server's heartbeat).
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') message.id = text;
        else if (field === 'event') message.event = text;
        else if (field === 'data') data.push(text);
      }
      if (data.length === 0) continue;
      message.data = data.join('\n');
      if (message.id !== null) last = message.id;
      onMessage(message);
    }
  }
}
