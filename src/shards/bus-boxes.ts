import { BoxOpener, isBox, UnopenableBoxError } from '../bus/identifier-box.js';
import type { Context } from '../context.js';
import type { BusEvent } from './bus-event.js';

/** One opener per master key for the life of the process: it keeps the keys it agreed. */
const openers = new WeakMap<Buffer, BoxOpener>();

function openerOf(context: Context): BoxOpener {
  const { masterKey } = context.dataDir;
  let opener = openers.get(masterKey);
  if (!opener) {
    opener = new BoxOpener(masterKey);
    openers.set(masterKey, opener);
  }
  return opener;
}

export interface OpenedEvents {
  /** The events as landing lines: identifiers in the clear, as a collector writes them to a file. */
  opened: BusEvent[];
  /** Events whose box no bus key of this master key opens, each with why. */
  unopenable: { event: BusEvent; failure: UnopenableBoxError }[];
}

/** The box text's start as bytes: a line without it holds no box and is passed on as it came. */
const BOX_MARK = Buffer.from('"cdsbox1.');

/**
 * Opens each event's identifier box (bus/identifier-box.ts) back into its
 * `properties.identifiers`, so the batch reads the very line a landing file would hold. Must run
 * before identity resolution, which reads the identifiers. A line a collector wrote before boxes
 * existed holds none and is ingested as it is.
 */
export function openBoxes(context: Context, events: readonly BusEvent[]): OpenedEvents {
  const opener = openerOf(context);
  const outcome: OpenedEvents = { opened: [], unopenable: [] };
  for (const event of events) {
    const bytes = Buffer.from(event.data.buffer, event.data.byteOffset, event.data.byteLength);
    if (bytes.indexOf(BOX_MARK) === -1) {
      outcome.opened.push(event);
      continue;
    }
    try {
      outcome.opened.push({ ...event, data: openedLine(opener, event, bytes) });
    } catch (error) {
      if (!(error instanceof UnopenableBoxError)) throw error;
      outcome.unopenable.push({ event, failure: error });
    }
  }
  return outcome;
}

/**
 * The line with its box replaced by the identifiers' JSON, every other byte as published: the
 * box's text is random, so it occurs once, where the collector put it.
 */
function openedLine(opener: BoxOpener, event: BusEvent, bytes: Buffer): Uint8Array {
  const text = bytes.toString('utf8');
  let line: { event?: { properties?: Record<string, unknown> } };
  try {
    line = JSON.parse(text);
  } catch {
    // Not JSON: the staging pass rejects it as unparsable, as it would in a landing file.
    return event.data;
  }
  const properties = line?.event?.properties;
  if (typeof properties !== 'object' || properties === null) return event.data;
  const boxed = properties.identifiers;
  if (!isBox(boxed)) return event.data;
  const plain = opener.open(boxed, event.tenantId);
  const at = text.indexOf(`"${boxed}"`);
  return Buffer.from(`${text.slice(0, at)}${plain}${text.slice(at + boxed.length + 2)}`);
}
