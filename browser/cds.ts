/**
 * The cds browser SDK, served by the collector at `/v1/cds.js` (docs/sending-events.md).
 * Dependency-free and a classic script: it defines `window.cds` and nothing else, and nothing it
 * does throws into the host page (a wrong call is a console warning).
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
  /** Unsent events a tab keeps at most; past that the oldest are dropped (default 1000). */
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

/** An event as a tab's queue keeps it. */
interface Held {
  event: Envelope;
  /** A page sent it in a beacon: no page sends it in another. */
  beaconed?: true;
}

/** What the collector's answer to a batch means for it: done with, or to be sent again. */
type Answer = { retry: false } | { retry: true; afterSeconds: number };

interface QueueOptions {
  tenant: string;
  workspace: string;
  batchSize: number;
  flushInterval: number;
  maxItems: number;
  send(batch: Envelope[]): Promise<Answer>;
  /** Sends a batch from a page that is going away; its answer is never seen. */
  beacon(batch: Envelope[]): void;
}

(() => {
  const COOKIE = 'cds_anon_id';
  const YEAR_SECONDS = 365 * 24 * 60 * 60;
  /** `navigator.sendBeacon` takes at most 64 KiB at a time; a request is kept under that. */
  const MAX_BODY_CHARS = 60_000;
  const MAX_RETRY_MS = 60_000;
  /** Calls kept from before `cds.init` at most (the oldest go first). */
  const MAX_EARLY_CALLS = 1000;

  /*
   * Tabs share localStorage, so each tab keeps its events under its own keys and refreshes an
   * ack time while it holds any (after segmentio/localstorage-retry). A tab whose ack is older
   * than STALE_MS is gone (closed, crashed, or let go of them on leaving): another tab reclaims
   * its events, after a claim that lets only one of several claimants win.
   */
  const KEY_PREFIX = 'cds_queue:';
  const ACK_EVERY_MS = 1000;
  const RECLAIM_CHECK_EVERY_MS = 3000;
  const STALE_MS = 10_000;
  /**
   * Long enough for a write to localStorage to reach the other tabs, as a rule; short, as a
   * page that holds a lock when it is left does not enter the back-forward cache.
   */
  const CLAIM_WAIT_MS = 500;

  function uuid(): string {
    if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    bytes[6] = ((bytes[6] as number) & 0x0f) | 0x40;
    bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
    const hex = Array.from(bytes, (byte) => (byte + 0x100).toString(16).slice(1)).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }

  const warn = (...message: unknown[]) => console.warn('cds:', ...message);

  /**
   * localStorage, shared by the site's tabs, or this page's memory where localStorage is blocked
   * or full. Never throws.
   */
  function openStore() {
    const memory = new Map<string, string>();
    /** Queue keys this page wrote: they move to memory, values and all, if localStorage fails. */
    const written = new Set<string>();
    let shared: Storage | null = null;
    try {
      shared = window.localStorage;
      shared.getItem(COOKIE);
    } catch {
      shared = null;
    }

    function get(key: string): string | null {
      try {
        if (shared) return shared.getItem(key);
      } catch {
        // Read as memory below.
      }
      return memory.get(key) ?? null;
    }

    /**
     * From here on this page keeps its queue to itself: other tabs no longer see it, so none
     * takes this page's events for a closed tab's while this page still sends them. The
     * visitor id's copy stays where the next page reads it.
     */
    function toMemory(): void {
      for (const key of written) {
        const value = get(key);
        if (value !== null) memory.set(key, value);
        try {
          shared?.removeItem(key);
        } catch {
          // Nothing more to do: the copy in memory is the one read from now on.
        }
      }
      shared = null;
    }

    return {
      get,
      set(key: string, value: string): void {
        if (key.startsWith(KEY_PREFIX)) written.add(key);
        if (shared) {
          try {
            shared.setItem(key, value);
            return;
          } catch {
            toMemory();
          }
        }
        memory.set(key, value);
      },
      remove(key: string): void {
        written.delete(key);
        memory.delete(key);
        try {
          shared?.removeItem(key);
        } catch {
          // Removed from memory; localStorage is not read again once it fails.
        }
      },
      keys(): string[] {
        try {
          if (shared) return Object.keys(shared);
        } catch {
          // Listed from memory below.
        }
        return Array.from(memory.keys());
      },
    };
  }

  const store = openStore();

  /** The first items that fit one request of at most `batchSize` events. */
  function firstBatch(items: Held[], batchSize: number): Held[] {
    const batch: Held[] = [];
    let chars = 12;
    for (const item of items) {
      const size = JSON.stringify(item.event).length + 1;
      if (batch.length === batchSize || (batch.length > 0 && chars + size > MAX_BODY_CHARS)) break;
      batch.push(item);
      chars += size;
    }
    return batch;
  }

  /**
   * The one owner of delivery: it stores what is added, sends it in batches, and alone decides
   * retries (exponential backoff with jitter, a ceiling, and at most `maxItems` kept).
   */
  function createQueue(options: QueueOptions) {
    const tab = uuid();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let retryAt = 0;
    let failures = 0;
    let sending: Promise<void> | null = null;
    /** False from the page's hide on leaving until it is shown again (back-forward cache). */
    let live = true;
    /** The ids of the batch a request carries now: a beacon leaves them out. */
    let inFlight = new Set<string>();

    /** Tenant, workspace, tab and part as a JSON tuple: no value can run into another. */
    const keyOf = (owner: string, part: 'queue' | 'ack' | 'claim' | 'claimed') =>
      KEY_PREFIX + JSON.stringify([options.tenant, options.workspace, owner, part]);
    const ownQueue = keyOf(tab, 'queue');
    const ownAck = keyOf(tab, 'ack');

    function parsed<Item>(value: string | null): Item[] {
      try {
        const items: unknown = JSON.parse(value ?? '[]');
        return Array.isArray(items) ? (items as Item[]) : [];
      } catch {
        return [];
      }
    }

    /** This tab's items as stored: another tab may have reclaimed them meanwhile. */
    const held = () => parsed<Held>(store.get(ownQueue));

    const ack = () => store.set(ownAck, String(Date.now()));

    function refreshAck(): void {
      if (live && store.get(ownQueue) !== null) ack();
    }

    /**
     * Writes what the tab holds. The ack goes first and leaves last: other tabs see the writes
     * in this order, so none finds this tab's items without a fresh ack and takes them.
     */
    function hold(items: Held[]): void {
      if (items.length === 0) {
        store.remove(ownQueue);
        store.remove(ownAck);
        return;
      }
      if (live) ack();
      store.set(ownQueue, JSON.stringify(items.slice(-options.maxItems)));
    }

    /** The other tabs of this site that left keys, whether they hold items or not. */
    function otherTabs(): Set<string> {
      const tabs = new Set<string>();
      for (const key of store.keys()) {
        if (!key.startsWith(KEY_PREFIX)) continue;
        try {
          const [tenant, workspace, owner]: unknown[] = JSON.parse(key.slice(KEY_PREFIX.length));
          if (
            tenant === options.tenant &&
            workspace === options.workspace &&
            typeof owner === 'string' &&
            owner !== tab
          ) {
            tabs.add(owner);
          }
        } catch {
          // Not a key of this version of the SDK.
        }
      }
      return tabs;
    }

    const isStale = (owner: string) =>
      Date.now() - Number(store.get(keyOf(owner, 'ack'))) >= STALE_MS;

    /** Moves a gone tab's items into this tab's queue, and its keys out of storage. */
    function take(owner: string): void {
      if (!isStale(owner)) return;
      const items = parsed<Held>(store.get(keyOf(owner, 'queue')));
      for (const part of ['queue', 'ack', 'claim', 'claimed'] as const) {
        store.remove(keyOf(owner, part));
      }
      // Older than what this tab holds: sent first, and dropped first when the queue is full.
      if (items.length > 0) {
        hold(items.concat(held()));
        void flush();
      }
    }

    /**
     * Takes a gone tab's items unless another tab claims them at the same time. With Web Locks
     * the browser grants the owner's lock to one tab, which keeps it until its removal of the
     * owner's keys has reached the other tabs (localStorage reaches them with a delay). Without them (an http page, an old browser), each claimant writes its
     * name, waits, and goes on only if its name is still the one written: the two-step claim of
     * localstorage-retry, sound while writes reach the other tabs within the wait.
     */
    function claim(owner: string): void {
      const locks: LockManager | undefined = navigator.locks;
      if (locks) {
        locks
          .request(keyOf(owner, 'claim'), { ifAvailable: true }, (lock) => {
            if (!lock) return undefined;
            take(owner);
            return new Promise((resolve) => setTimeout(resolve, CLAIM_WAIT_MS));
          })
          .catch(() => undefined);
        return;
      }
      const claimKey = keyOf(owner, 'claim');
      const claimedKey = keyOf(owner, 'claimed');
      store.set(claimKey, tab);
      setTimeout(() => {
        if (store.get(claimKey) !== tab) return;
        store.set(claimedKey, tab);
        setTimeout(() => {
          if (store.get(claimKey) === tab && store.get(claimedKey) === tab) take(owner);
        }, CLAIM_WAIT_MS);
      }, CLAIM_WAIT_MS);
    }

    function reclaimStale(): void {
      otherTabs().forEach((owner) => {
        if (isStale(owner)) claim(owner);
      });
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
      for (;;) {
        const wait = retryAt - Date.now();
        if (wait > 0) {
          schedule(wait);
          return;
        }
        const batch = firstBatch(held(), options.batchSize);
        if (batch.length === 0) return;
        // Fresh for the length of the request, so no tab takes these items meanwhile.
        refreshAck();
        inFlight = new Set(batch.map((item) => item.event.id));
        const answer = await options.send(batch.map((item) => item.event));
        const sent = inFlight;
        inFlight = new Set();
        if (answer.retry) {
          backOff(answer.afterSeconds);
          return;
        }
        failures = 0;
        hold(held().filter((item) => !sent.has(item.event.id)));
      }
    }

    function flush(): Promise<void> {
      if (timer !== undefined) {
        clearTimeout(timer);
        timer = undefined;
      }
      if (!sending) {
        sending = drain()
          .catch((error: unknown) => warn(error))
          .finally(() => {
            sending = null;
          });
      }
      return sending;
    }

    /**
     * The page is hidden: what the tab holds and no page sent in a beacon yet leaves in one (a
     * page leaving is told both by `pagehide` and by `visibilitychange`: the second finds
     * nothing left to send). The items stay held until an answer covers them, as a beacon's
     * never comes: this page, if it is shown again, or the next one sends them again, and ingest
     * keeps the first of each id. On leaving, the tab lets go of its items so the next page
     * takes them without waiting for a stale ack.
     */
    function hide(leaving: boolean): void {
      const items = held();
      const unsent = items.filter((item) => !item.beaconed && !inFlight.has(item.event.id));
      const batch = firstBatch(unsent, options.batchSize);
      if (batch.length > 0) {
        for (const item of batch) item.beaconed = true;
        hold(items);
        options.beacon(batch.map((item) => item.event));
      }
      if (leaving) {
        live = false;
        if (store.get(ownQueue) !== null) store.set(ownAck, '0');
      }
    }

    function show(): void {
      live = true;
      refreshAck();
    }

    // Where SDKs before per-tab queues kept one queue for all tabs: its events join this tab's.
    const legacyKey = `${KEY_PREFIX}${options.tenant}/${options.workspace}`;
    const legacy = parsed<Envelope>(store.get(legacyKey));
    store.remove(legacyKey);
    if (legacy.length > 0) hold(legacy.map((event) => ({ event })));
    setInterval(refreshAck, ACK_EVERY_MS);
    setInterval(reclaimStale, RECLAIM_CHECK_EVERY_MS);
    reclaimStale();

    return {
      add(event: Envelope): void {
        const items = held().concat({ event });
        hold(items);
        if (items.length >= options.batchSize) void flush();
        else schedule(options.flushInterval);
      },
      flush,
      hide,
      show,
    };
  }

  const post = (endpoint: string, body: string, keepalive: boolean) =>
    // text/plain and no custom header: a CORS simple request, sent without a preflight.
    fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body,
      credentials: 'omit',
      keepalive,
    });

  async function send(endpoint: string, batch: Envelope[]): Promise<Answer> {
    let response: Response;
    try {
      response = await post(endpoint, JSON.stringify({ events: batch }), false);
    } catch {
      return { retry: true, afterSeconds: 0 };
    }
    if (response.status === 429 || response.status >= 500) {
      return { retry: true, afterSeconds: Number(response.headers.get('retry-after')) || 0 };
    }
    // Accepted, refused per event, or refused as a whole (4xx): sending again cannot change it.
    return { retry: false };
  }

  function beacon(endpoint: string, batch: Envelope[]): void {
    const body = JSON.stringify({ events: batch });
    const beaconSent =
      typeof navigator.sendBeacon === 'function' &&
      navigator.sendBeacon(endpoint, new Blob([body], { type: 'text/plain' }));
    if (!beaconSent) post(endpoint, body, true).catch(() => undefined);
  }

  /** The visitor id: the cookie's, else the one in localStorage (cookies blocked), else a new one. */
  function visitorId(): string {
    const cookie = /(?:^|;\s*)cds_anon_id=([0-9a-fA-F-]{36})(?:;|$)/.exec(document.cookie);
    const kept = store.get(COOKIE);
    const id = cookie?.[1] ?? (kept && /^[0-9a-fA-F-]{36}$/.test(kept) ? kept : uuid());
    const secure = location.protocol === 'https:' ? '; Secure' : '';
    // biome-ignore lint/suspicious/noDocumentCookie: the Cookie Store API is missing in Firefox and older Safari
    document.cookie = `${COOKIE}=${id}; Max-Age=${YEAR_SECONDS}; Path=/; SameSite=Lax${secure}`;
    store.set(COOKIE, id);
    return id;
  }

  /** The registered event name a display name stands for: `Order Completed` → `order_completed`. */
  function eventName(name: string): string {
    return String(name)
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '');
  }

  interface Tracked {
    id: string;
    name: string;
    properties: Record<string, unknown>;
    at: string;
  }

  let site: { tenant: string; workspace: string; queue: ReturnType<typeof createQueue> } | null =
    null;
  let visitor = '';
  /** `track` calls made before `init`, sent once it comes. */
  const early: Tracked[] = [];

  function envelope(tracked: Tracked, tenant: string, workspace: string): Envelope {
    return {
      envelop_version: '1.0',
      id: tracked.id,
      name: tracked.name,
      tenant_id: tenant,
      workspace_id: workspace,
      anon_id: `cookie:${visitor}`,
      occured_at: tracked.at,
      properties: tracked.properties,
    };
  }

  function init(options: CdsOptions): void {
    if (site) {
      warn('cds.init was called already; this call is ignored');
      return;
    }
    const { url, tenant, workspace } = options ?? {};
    if (![url, tenant, workspace].every((value) => typeof value === 'string' && value !== '')) {
      warn('cds.init needs { url, tenant, workspace }');
      return;
    }
    const query = `tenant_id=${encodeURIComponent(tenant)}&workspace_id=${encodeURIComponent(workspace)}`;
    const endpoint = `${url.replace(/\/+$/, '')}/v1/events/batch?${query}`;
    visitor ||= visitorId();
    const queue = createQueue({
      tenant,
      workspace,
      batchSize: Math.max(1, Math.min(options.batchSize ?? 20, 1000)),
      flushInterval: options.flushInterval ?? 2000,
      maxItems: options.maxQueue ?? 1000,
      send: (batch) => send(endpoint, batch),
      beacon: (batch) => beacon(endpoint, batch),
    });
    site = { tenant, workspace, queue };
    for (const tracked of early.splice(0)) queue.add(envelope(tracked, tenant, workspace));
    void queue.flush();
    addEventListener('pagehide', () => queue.hide(true));
    addEventListener('pageshow', (event) => {
      if (event.persisted) queue.show();
    });
    addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'hidden') queue.hide(false);
    });
  }

  function track(name: string, properties: Record<string, unknown> = {}): string {
    const tracked: Tracked = {
      id: uuid(),
      name: eventName(name),
      // A copy: what the page changes afterwards is not what it tracked.
      properties: JSON.parse(JSON.stringify(properties ?? {})),
      at: new Date().toISOString(),
    };
    if (site) {
      site.queue.add(envelope(tracked, site.tenant, site.workspace));
    } else {
      early.push(tracked);
      if (early.length > MAX_EARLY_CALLS) early.shift();
    }
    return tracked.id;
  }

  /** Runs a call of the host page, turning any failure into a console warning. */
  function guarded<Args extends unknown[], Result>(
    call: (...args: Args) => Result,
    fallback: Result,
  ): (...args: Args) => Result {
    return (...args) => {
      try {
        return call(...args);
      } catch (error) {
        warn(error);
        return fallback;
      }
    };
  }

  const cds = {
    init: guarded(init, undefined),
    /** Queues an event and returns its id; before `init` it waits for it. */
    track: guarded(track, ''),
    /** Sends what is queued now; before `init` there is nothing to send. */
    flush: guarded(() => (site ? site.queue.flush() : Promise.resolve()), Promise.resolve()),
    /** The visitor id; the events' `anon_id` is `cookie:` followed by it. */
    anonymousId: guarded(() => (visitor ||= visitorId()), ''),
  };

  (window as unknown as { cds: typeof cds }).cds = cds;
})();
