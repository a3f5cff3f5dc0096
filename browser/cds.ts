/**
 * The cds browser SDK, served by the collector at `/v1/cds.js` (docs/sending-events.md).
 * Dependency-free and a classic script: it defines `window.cds` and nothing else.
 */

interface CdsOptions {
  /** The collector's base URL, e.g. `https://collect.example.com`. */
  url: string;
  tenant: string;
  workspace: string;
  /** Events a request carries at most; a full batch is sent at once (default 20). */
  batchSize?: number;
  /** How long a tracked event waits for others before it is sent, in ms (default 2000). */
  flushInterval?: number;
  /** Unsent events kept at most; past that the oldest are dropped (default 1000). */
  maxQueue?: number;
}

interface Envelope {
  envelop_version: '1.0';
  id: string;
  name: string;
  tenant_id: string;
  workspace_id: string;
  anon_id: string;
  occured_at: string;
  properties: Record<string, unknown>;
}

interface Settings {
  endpoint: string;
  tenant: string;
  workspace: string;
  batchSize: number;
  flushInterval: number;
  maxQueue: number;
  storageKey: string;
}

(() => {
  const COOKIE = 'cds_anon_id';
  const YEAR_SECONDS = 365 * 24 * 60 * 60;
  /** `navigator.sendBeacon` takes at most 64 KiB at a time; a request is kept under that. */
  const MAX_BODY_CHARS = 60_000;
  const MAX_RETRY_MS = 60_000;

  let settings: Settings | null = null;
  let visitor = '';
  let queue: Envelope[] = [];
  /** Ids the collector answered for: never sent again, and dropped from storage by every tab. */
  const acknowledged = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let retryAt = 0;
  let failures = 0;
  let sending: Promise<void> | null = null;

  function uuid(): string {
    if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    bytes[6] = ((bytes[6] as number) & 0x0f) | 0x40;
    bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
    const hex = Array.from(bytes, (byte) => (byte + 0x100).toString(16).slice(1)).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }

  function stored(key: string): string | null {
    try {
      return localStorage.getItem(key);
    } catch {
      return null;
    }
  }

  function store(key: string, value: string): void {
    try {
      localStorage.setItem(key, value);
    } catch {
      // Storage full or forbidden (private mode): the events stay in memory only.
    }
  }

  /** The visitor id: the cookie's, else the one in localStorage (cookies blocked), else a new one. */
  function visitorId(): string {
    const cookie = /(?:^|;\s*)cds_anon_id=([0-9a-fA-F-]{36})(?:;|$)/.exec(document.cookie);
    const kept = stored(COOKIE);
    const id = cookie?.[1] ?? (kept && /^[0-9a-fA-F-]{36}$/.test(kept) ? kept : uuid());
    const secure = location.protocol === 'https:' ? '; Secure' : '';
    // biome-ignore lint/suspicious/noDocumentCookie: the Cookie Store API is missing in Firefox and older Safari
    document.cookie = `${COOKIE}=${id}; Max-Age=${YEAR_SECONDS}; Path=/; SameSite=Lax${secure}`;
    store(COOKIE, id);
    return id;
  }

  function load(key: string): Envelope[] {
    try {
      const parsed: unknown = JSON.parse(stored(key) ?? '[]');
      return Array.isArray(parsed) ? (parsed as Envelope[]) : [];
    } catch {
      return [];
    }
  }

  /**
   * Writes the queue, keeping what other tabs of the site stored meanwhile and leaving out what
   * any collector answer acknowledged, so a reload sends every unacknowledged event again.
   */
  function persist(): void {
    if (!settings) return;
    const mine = new Set(queue.map((event) => event.id));
    const others = load(settings.storageKey).filter(
      (event) => !mine.has(event.id) && !acknowledged.has(event.id),
    );
    store(settings.storageKey, JSON.stringify(others.concat(queue).slice(-settings.maxQueue)));
  }

  /** The first events of the queue that fit one request. */
  function nextBatch(): Envelope[] {
    if (!settings) return [];
    const batch: Envelope[] = [];
    let chars = 12;
    for (const event of queue) {
      const size = JSON.stringify(event).length + 1;
      if (
        batch.length === settings.batchSize ||
        (batch.length > 0 && chars + size > MAX_BODY_CHARS)
      ) {
        break;
      }
      batch.push(event);
      chars += size;
    }
    return batch;
  }

  function done(batch: Envelope[]): void {
    for (const event of batch) acknowledged.add(event.id);
    queue = queue.filter((event) => !acknowledged.has(event.id));
    persist();
  }

  function schedule(delay: number): void {
    if (timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      void flush();
    }, delay);
  }

  /** Exponential backoff with full jitter, or the collector's `retry-after` when it gave one. */
  function backOff(retryAfterSeconds: number): void {
    failures += 1;
    const ceiling = Math.min(MAX_RETRY_MS, 1000 * 2 ** failures);
    const delay =
      retryAfterSeconds > 0
        ? retryAfterSeconds * 1000
        : ceiling / 2 + (Math.random() * ceiling) / 2;
    retryAt = Date.now() + delay;
    schedule(delay);
  }

  async function drain(): Promise<void> {
    while (settings && queue.length > 0) {
      const wait = retryAt - Date.now();
      if (wait > 0) {
        schedule(wait);
        return;
      }
      const batch = nextBatch();
      let response: Response;
      try {
        // text/plain and no custom header: a CORS simple request, sent without a preflight.
        response = await fetch(settings.endpoint, {
          method: 'POST',
          headers: { 'content-type': 'text/plain' },
          body: JSON.stringify({ events: batch }),
          credentials: 'omit',
        });
      } catch {
        backOff(0);
        return;
      }
      if (response.status === 429 || response.status >= 500) {
        backOff(Number(response.headers.get('retry-after')) || 0);
        return;
      }
      // Accepted, refused per event, or refused as a whole (4xx): sending again cannot change it.
      failures = 0;
      done(batch);
    }
  }

  function flush(): Promise<void> {
    if (!settings) return Promise.resolve();
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (!sending) {
      sending = drain().finally(() => {
        sending = null;
      });
    }
    return sending;
  }

  /**
   * The page is going away: what is queued leaves in a beacon, which the browser sends after the
   * page is gone. The events stay stored until an answer acknowledges them (a beacon's never
   * comes), so the next page sends them again and ingest keeps the first of each id.
   */
  function sendOnHide(): void {
    if (!settings || queue.length === 0) return;
    const body = JSON.stringify({ events: nextBatch() });
    const beaconSent =
      typeof navigator.sendBeacon === 'function' &&
      navigator.sendBeacon(settings.endpoint, new Blob([body], { type: 'text/plain' }));
    if (!beaconSent) {
      void fetch(settings.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body,
        credentials: 'omit',
        keepalive: true,
      }).catch(() => undefined);
    }
  }

  /** The registered event name a display name stands for: `Order Completed` → `order_completed`. */
  function eventName(name: string): string {
    return name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '');
  }

  const cds = {
    init(options: CdsOptions): void {
      const base = options.url.replace(/\/+$/, '');
      const query = `tenant_id=${encodeURIComponent(options.tenant)}&workspace_id=${encodeURIComponent(options.workspace)}`;
      settings = {
        endpoint: `${base}/v1/events/batch?${query}`,
        tenant: options.tenant,
        workspace: options.workspace,
        batchSize: Math.max(1, Math.min(options.batchSize ?? 20, 1000)),
        flushInterval: options.flushInterval ?? 2000,
        maxQueue: options.maxQueue ?? 1000,
        storageKey: `cds_queue:${options.tenant}/${options.workspace}`,
      };
      visitor = visitorId();
      queue = load(settings.storageKey);
      if (queue.length > 0) void flush();
      addEventListener('pagehide', sendOnHide);
      addEventListener('visibilitychange', () => {
        if (document.visibilityState === 'hidden') sendOnHide();
      });
    },

    track(name: string, properties: Record<string, unknown> = {}): string {
      if (!settings) throw new Error('cds.init({ url, tenant, workspace }) first');
      const event: Envelope = {
        envelop_version: '1.0',
        id: uuid(),
        name: eventName(name),
        tenant_id: settings.tenant,
        workspace_id: settings.workspace,
        anon_id: `cookie:${visitor}`,
        occured_at: new Date().toISOString(),
        properties,
      };
      queue.push(event);
      if (queue.length > settings.maxQueue) queue.splice(0, queue.length - settings.maxQueue);
      persist();
      if (queue.length >= settings.batchSize) void flush();
      else schedule(settings.flushInterval);
      return event.id;
    },

    flush,

    /** The visitor id; the events' `anon_id` is `cookie:` followed by it. */
    anonymousId(): string {
      return visitor;
    },
  };

  (window as unknown as { cds: typeof cds }).cds = cds;
})();
