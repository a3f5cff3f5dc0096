import { systemClock } from '../clock.js';
import type { Context } from '../context.js';
import { ValidationError } from '../errors.js';
import { componentLog } from '../telemetry/log.js';
import { prometheusSeries } from '../telemetry/prometheus.js';
import { packageVersion } from '../version.js';
import { answeredAttemptError, thrownAttemptError } from './attempt-error.js';
import { retryPauseMs } from './backoff.js';
import { signedHeaders } from './signing.js';

const GIVE_UP_AFTER_MS = 24 * 60 * 60 * 1000;
const ATTEMPT_TIMEOUT_MS = 10_000;
const BATCH = 1000;
/** Requests in flight at once, so a round of a thousand rows does not open a thousand sockets. */
const PARALLEL_ATTEMPTS = 32;

interface DueWebhook {
  webhook_id: string;
  tenant_id: string;
  workspace_id: string;
  segment_id: string | null;
  profile_id: string;
  type: string;
  /** `consent.changed`: the categories the profile revoked. */
  revoked_categories: string[] | null;
  backfill: boolean;
  created_at: string;
  attempts: number;
  first_attempt_at: string | null;
}

export interface SenderOptions {
  url: string;
  secret: string;
  /** The first wait after a failure; it doubles per attempt (`retryPauseMs`). */
  retryBaseMs: number;
  pollMs: number;
  /** How long an attempt waits for the receiver's answer; 10 s unless given. */
  attemptTimeoutMs?: number;
}

/** The body carries ids only (interface "Outbound events" 1), built the same for every attempt. */
function webhookBody(webhook: DueWebhook): string {
  if (webhook.type === 'consent.changed') {
    // Ids and categories only: a receiver learns that it may no longer use the profile so.
    return JSON.stringify({
      type: webhook.type,
      timestamp: webhook.created_at,
      data: {
        tenant_id: webhook.tenant_id,
        workspace_id: webhook.workspace_id,
        profile_id: webhook.profile_id,
        revoked: webhook.revoked_categories ?? [],
      },
    });
  }
  return JSON.stringify({
    type: webhook.type,
    timestamp: webhook.created_at,
    data: {
      tenant_id: webhook.tenant_id,
      workspace_id: webhook.workspace_id,
      segment_id: webhook.segment_id,
      profile_id: webhook.profile_id,
      backfill: webhook.backfill,
    },
  });
}

/**
 * Delivers the outbox at least once (design §14): a row is marked delivered only after a 2xx, so a
 * crash in between sends it again with the same `webhook-id`. Failures wait exponentially longer,
 * with jitter, and after 24 hours of attempts the row is kept as failed.
 */
export class WebhookSender {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** A round was asked for while one ran: its rows may have been committed after it read. */
  private again = false;

  constructor(
    private readonly context: Context,
    private readonly options: SenderOptions,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.tick(), this.options.pollMs);
    this.tick();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.again = false;
    await this.running;
  }

  /**
   * Asks for a delivery round now, e.g. right after a batch committed. Asked during a round, it
   * runs another once that one is done, rather than wait for the next poll: a round waits its
   * turn to record what it sent behind the next ingest batch, whose rows it did not read.
   */
  tick(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.deliverDue()
      .then(
        () => undefined,
        (error: unknown) => {
          componentLog('webhooks').error({ err: error }, 'webhook delivery round failed');
        },
      )
      .finally(() => {
        this.running = null;
        if (this.again && this.timer) {
          this.again = false;
          this.tick();
        }
      });
  }

  /**
   * Sends every due webhook; resolves when each attempt is recorded. Deliveries are scheduled on
   * the system clock (`wall_now`): their pauses are real waits for a receiver, which a clock a
   * test holds still must not stop.
   */
  async deliverDue(): Promise<number> {
    let sent = 0;
    const readDue = () =>
      this.context.store.read((session) =>
        session.all<DueWebhook>('webhooks_due', {
          wall_now: systemClock.now().toISOString(),
          limit: BATCH,
        }),
      );
    for (;;) {
      let due = await readDue();
      if (due.length === 0) return sent;
      // Consent is read when a delivery is due, so a revocation stops what is still queued.
      const withheld = await this.context.store.read((session) =>
        session.all<{ webhook_id: string }>('webhooks_due_without_consent', {
          wall_now: systemClock.now().toISOString(),
        }),
      );
      if (withheld.length > 0) {
        await this.context.store.write((session) =>
          session.run('webhooks_withhold', {
            ids: JSON.stringify(withheld.map((row) => row.webhook_id)),
          }),
        );
        due = await readDue();
      }
      if (due.length === 0) return sent;
      const outcomes = await this.attemptAll(due);
      await this.record(due, outcomes);
      sent += due.length;
      if (due.length < BATCH) return sent;
    }
  }

  /** Attempts every row, at most `PARALLEL_ATTEMPTS` at a time; the errors in row order. */
  private async attemptAll(due: DueWebhook[]): Promise<(string | null)[]> {
    const errors: (string | null)[] = new Array(due.length).fill(null);
    let next = 0;
    const worker = async () => {
      while (next < due.length) {
        const index = next++;
        errors[index] = await this.attempt(due[index] as DueWebhook);
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL_ATTEMPTS, due.length) }, worker));
    return errors;
  }

  /** null when delivered, else the cause `last_error` keeps (src/webhooks/attempt-error.ts). */
  private async attempt(webhook: DueWebhook): Promise<string | null> {
    const body = webhookBody(webhook);
    const headers = {
      ...signedHeaders(
        this.options.secret,
        webhook.webhook_id,
        // The receiver checks it against its own clock, so it is the system's, never a test's.
        Math.floor(systemClock.now().getTime() / 1000),
        body,
      ),
      'user-agent': `cds/${packageVersion()}`,
    };
    const timeoutMs = this.options.attemptTimeoutMs ?? ATTEMPT_TIMEOUT_MS;
    try {
      const response = await fetch(this.options.url, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (response.ok) {
        await response.body?.cancel();
        return null;
      }
      return await answeredAttemptError(response);
    } catch (error) {
      return thrownAttemptError(error, timeoutMs);
    }
  }

  private async record(due: DueWebhook[], errors: (string | null)[]): Promise<void> {
    const now = systemClock.now();
    const wallNow = now.toISOString();
    await this.context.store.write(async (session) => {
      const delivered = due.filter((_, index) => errors[index] === null);
      if (delivered.length > 0) {
        await session.run('webhooks_mark_delivered', {
          ids: JSON.stringify(delivered.map((webhook) => webhook.webhook_id)),
          wall_now: wallNow,
        });
      }
      for (const [index, webhook] of due.entries()) {
        const error = errors[index];
        if (error === null || error === undefined) continue;
        const firstAttempt = webhook.first_attempt_at
          ? Date.parse(webhook.first_attempt_at)
          : now.getTime();
        await session.run('webhooks_mark_failed_attempt', {
          webhook_id: webhook.webhook_id,
          error,
          wall_now: wallNow,
          give_up: now.getTime() - firstAttempt >= GIVE_UP_AFTER_MS,
          next_attempt_at: new Date(
            now.getTime() + retryPauseMs(webhook.attempts, this.options.retryBaseMs),
          ).toISOString(),
        });
      }
    });
    recordAttempts(due, errors, now);
  }
}

/** Metrics of the attempts just recorded, and a log record for each failed one with its cause. */
function recordAttempts(due: DueWebhook[], errors: (string | null)[], now: Date): void {
  for (const [index, webhook] of due.entries()) {
    const error = errors[index];
    if (error === null || error === undefined) {
      prometheusSeries().webhookAttempts.inc({ outcome: 'delivered' });
      const queuedAt = Date.parse(webhook.created_at);
      if (Number.isFinite(queuedAt)) {
        prometheusSeries().webhookDeliveryLatency.observe(
          Math.max(0, (now.getTime() - queuedAt) / 1000),
        );
      }
      continue;
    }
    prometheusSeries().webhookAttempts.inc({ outcome: 'failed' });
    componentLog('webhooks').warn(
      {
        webhook_id: webhook.webhook_id,
        tenant_id: webhook.tenant_id,
        workspace_id: webhook.workspace_id,
        segment_id: webhook.segment_id,
        attempt: webhook.attempts + 1,
        cause: error,
      },
      'webhook delivery failed; it is tried again later',
    );
  }
}

/** The sender the configuration asks for: none without `webhook_url`, which needs a secret. */
export function configuredSender(context: Context): WebhookSender | null {
  const { webhook_url: url, webhook_secret: secret } = context.config;
  if (url === undefined) return null;
  if (secret === undefined) {
    throw ValidationError.field('webhook_secret', 'is required when webhook_url is set');
  }
  return new WebhookSender(context, {
    url,
    secret,
    retryBaseMs: context.config.webhook_retry_base_ms,
    pollMs: 250,
  });
}
