/**
 * The one error hierarchy of cds. Every expected failure is one of these; the HTTP layer maps
 * them to the error body of design §6 and the CLI prints their message.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class BadRequestError extends AppError {
  constructor(message: string, details?: unknown) {
    super(400, 'bad_request', message, details);
  }

  /** A body that does not parse, whichever parser read it. */
  static invalidJson(reason: string): BadRequestError {
    return new BadRequestError(`the body is not valid JSON: ${reason}`);
  }

  static emptyJson(): BadRequestError {
    return new BadRequestError('the JSON body is empty');
  }
}

export class UnauthorizedError extends AppError {
  constructor(message = 'a valid bearer token is required') {
    super(401, 'unauthorized', message);
  }
}

export class ForbiddenError extends AppError {
  constructor(message: string) {
    super(403, 'forbidden', message);
  }
}

/** A browser request or preflight from an origin its workspace does not allow (issue 19). */
export class OriginNotAllowedError extends AppError {
  constructor(origin: string) {
    super(
      403,
      'origin_not_allowed',
      `origin ${origin} may not send events here; a tenant token adds it to the workspace's allowed_origins`,
      { origin },
    );
  }
}

export class NotFoundError extends AppError {
  constructor(message: string) {
    super(404, 'not_found', message);
  }
}

export class RequestTimeoutError extends AppError {
  constructor() {
    super(408, 'request_timeout', 'the request did not arrive in time; the connection is closed');
  }
}

export class ConflictError extends AppError {
  /** `details`: what the request conflicts with, for a client to name it. */
  constructor(message: string, details?: unknown) {
    super(409, 'conflict', message, details);
  }
}

/**
 * A create that would take a tenant past one of its quotas (design §6: 409, the request conflicts
 * with what the tenant holds; retrying does not help until something is deleted or revoked).
 */
export class QuotaExceededError extends AppError {
  constructor(quota: string, limit: number) {
    super(
      409,
      'quota_exceeded',
      `this tenant already has the most ${quota.replaceAll('_', ' ')} it may have (${limit}); delete some first, or ask the operator to raise quota_${quota}`,
      { quota, limit },
    );
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(message: string) {
    super(413, 'payload_too_large', message);
  }
}

export class UnsupportedMediaTypeError extends AppError {
  constructor(message = 'the body must be JSON (content-type: application/json)') {
    super(415, 'unsupported_media_type', message);
  }
}

export class UriTooLongError extends AppError {
  constructor(limitBytes: number) {
    super(414, 'uri_too_long', `the URL is longer than ${limitBytes} bytes`);
  }
}

/** An `Expect` header other than `100-continue`, which is the only expectation cds meets. */
export class ExpectationFailedError extends AppError {
  constructor() {
    super(417, 'expectation_failed', 'the only Expect value taken is 100-continue');
  }
}

export class HeadersTooLargeError extends AppError {
  constructor(limitBytes: number) {
    super(
      431,
      'headers_too_large',
      `the request line and headers together are longer than ${limitBytes} bytes`,
    );
  }
}

export interface FieldIssue {
  path: string;
  message: string;
}

/** A body, query or predicate that fails validation; the message names the first faulty field. */
export class ValidationError extends AppError {
  constructor(readonly issues: FieldIssue[]) {
    const [first] = issues;
    super(
      422,
      'validation_failed',
      first ? `${first.path}: ${first.message}` : 'invalid input',
      issues,
    );
  }

  static field(path: string, message: string): ValidationError {
    return new ValidationError([{ path, message }]);
  }
}

/**
 * A setting cds cannot run with, named as it was given (`--port`, `CDS_CORS_ORIGINS`,
 * `cds.config.json: key`): the CLI says it in one line and exits 2, as for bad usage.
 */
export class ConfigError extends ValidationError {
  constructor(source: string, message: string) {
    super([{ path: source, message }]);
  }
}

/** The database was migrated by a newer cds: this one would misread what it does not know. */
export class DatabaseTooNewError extends AppError {
  constructor(path: string, databaseVersion: number, knownVersion: number) {
    super(
      503,
      'database_too_new',
      `${path} was migrated by a newer cds (schema version ${databaseVersion}; this cds knows up to ${knownVersion}): run that cds or a newer one, or restore a backup made before the upgrade`,
    );
  }
}

/**
 * `cds restore` will not go on: the backup is incomplete or damaged, its master key is missing or
 * another, or the target already holds a database. The message says which, and what to do.
 */
export class RestoreRefusedError extends AppError {
  constructor(message: string) {
    super(409, 'restore_refused', message);
  }
}

export class RateLimitedError extends AppError {
  constructor(readonly retryAfterSeconds: number) {
    super(429, 'rate_limited', `too many requests; retry after ${retryAfterSeconds} s`);
  }
}

/** A token holds as many live streams open as it may (issue 31): one must close first. */
export class TooManyStreamsError extends AppError {
  constructor(limit: number) {
    super(
      429,
      'too_many_streams',
      `this token already holds ${limit} live event streams open; close one first`,
    );
  }
}

/**
 * The collector could not put a request's events on disk (full, a file too large, failing). Some
 * of them may have been stored; a retry is safe, as ingest stores an event that arrives twice once.
 */
export class LandingWriteError extends AppError {
  constructor(cause: string) {
    super(
      503,
      'landing_write_failed',
      `the collector could not write the events to disk (${cause}); send them again: an event that arrives twice is stored once`,
    );
  }
}

/**
 * The bus (cluster mode) did not acknowledge a request's events within the retry budget, which
 * rides out a leader election: some may be in the stream. A retry is safe, as the stream and
 * ingest both store an event that arrives twice once.
 */
export class BusUnavailableError extends AppError {
  constructor(
    cause: string,
    readonly retryAfterSeconds: number,
  ) {
    super(
      503,
      'bus_unavailable',
      `the event stream did not acknowledge the events (${cause}); send them again: an event that arrives twice is stored once`,
    );
  }
}

/**
 * Cluster mode: a control-plane write committed, but the registry bucket did not take the change
 * within the retry budget, so collectors may still judge events by the entry before it. The next
 * write puts it; repeating this one is safe.
 */
export class RegistryNotPublishedError extends BusUnavailableError {
  constructor(cause: string, retryAfterSeconds: number) {
    super(cause, retryAfterSeconds);
    this.message = `the change is saved, but the collectors could not be told of it (${cause}); send it again once the bus is back`;
  }
}

/**
 * Cluster mode: no owner has published the bus key yet, so a collector could not box identifiers
 * and takes no event (its `/readyz` says so too) rather than put one plain in the stream.
 */
export class BusKeyMissingError extends BusUnavailableError {
  constructor() {
    // About the time an owner takes to start.
    super('no bus key', 5);
    this.message =
      'no bus key is published yet, so identifiers cannot be encrypted for the event stream: an owner publishes it when it starts; send the events again';
  }
}

/** Cluster mode: a collector whose registry is still loading from the bus (its `/readyz`). */
export class RegistryLoadingError extends AppError {
  constructor() {
    super(503, 'registry_loading', 'the collector is still loading the registry from the bus');
  }
}

/**
 * A starting `cds serve` still reading its ingest indexes (its `/readyz`): it takes events
 * meanwhile, and its first batch waits for them, so a deploy sends traffic once it is ready.
 */
export class IndexesLoadingError extends AppError {
  constructor() {
    super(
      503,
      'indexes_loading',
      'the server is still reading its ingest indexes; it takes events meanwhile and ingests them once they are read',
    );
  }
}

/**
 * Cluster mode: an owner behind its stream (its `/readyz`). It goes on ingesting and answering;
 * `details` holds what `/readyz` shows when ready, so a probe sees how far behind it is.
 */
export class IngestBehindError extends AppError {
  constructor(why: string, details: unknown) {
    super(
      503,
      'ingest_behind',
      `this owner is behind its stream: ${why}. It goes on ingesting and is ready once it has caught up`,
      details,
    );
  }
}

/**
 * In cluster mode, the request was for a tenant of another shard and that shard's owner could not
 * be reached, or no owner has announced itself for it.
 */
export class OwnerUnavailableError extends AppError {
  constructor(shard: string, cause: string) {
    super(
      503,
      'owner_unavailable',
      `the owner of shard ${shard}, which holds this tenant, could not be reached (${cause}); retry later`,
      { shard },
    );
  }
}

/**
 * In cluster mode, a write for a tenant that `cds shards move` is moving: its rows are being copied
 * to another shard, and a write taken now could miss the copy. Nothing was done; the same request
 * succeeds once the move is over (reads go on meanwhile, from the shard it is leaving).
 */
export class TenantMovingError extends AppError {
  readonly retryAfterSeconds = 5;
  constructor(tenantId: string, from: string, to: string | undefined) {
    super(
      503,
      'tenant_moving',
      `tenant ${tenantId} is moving from shard ${from} to shard ${to ?? '(unknown)'}; its writes wait until the move is done, retry later`,
      { from, to: to ?? null },
    );
  }
}

/** The server is draining (design §6: 503 shutting down); the request was not taken. */
export class ShuttingDownError extends AppError {
  constructor() {
    super(
      503,
      'shutting_down',
      'the server is shutting down and took nothing of this request; send it again once it is back',
    );
  }
}

/**
 * DuckDB needed more memory than `memory_limit` allows (it never spills, see Store.open); the
 * operation's transaction was rolled back.
 */
export class OutOfMemoryError extends AppError {
  constructor(usage: string) {
    super(
      503,
      'out_of_memory',
      `the database ran out of memory (${usage}); the operation was rolled back and nothing of it was stored. Raise memory_limit (CDS_MEMORY_LIMIT) or lower max_batch_events (CDS_MAX_BATCH_EVENTS): an ingest batch needs about 1.3 KiB of memory an event`,
    );
  }
}

/**
 * The disk under the database failed it (full, failing). `cause` says how in a few words and
 * never names the file; DuckDB's own message goes to the server's log.
 */
export class StoreUnavailableError extends AppError {
  /**
   * DuckDB invalidated the database after a failed write to disk: nothing can be read or written
   * until the store reopens the file, which it tries by itself (`Store`, reopening).
   */
  static invalidated(cause: string, details: { reason: string; since: string; attempts: number }) {
    return new StoreUnavailableError(
      `the database is unavailable since ${details.since}: ${cause}. cds reopens it by itself once it can, and nothing acknowledged is lost; retry later`,
      cause,
      details,
    );
  }

  /** One write failed and was rolled back; the database is still open. */
  static writeFailed(cause: string, reason: string) {
    return new StoreUnavailableError(
      `the database could not write: ${cause}; nothing of this write was stored. Retry later`,
      cause,
      { reason },
    );
  }

  /** The file could not be opened (a command exits with this). */
  static atOpen(path: string, cause: string) {
    return new StoreUnavailableError(
      `${path} could not be opened: ${cause}. Free space on its disk (or repair it) and start again`,
      cause,
    );
  }

  private constructor(
    message: string,
    /** The fault of the disk in a few words ("the disk is full (ENOSPC)"). */
    readonly storageCause: string,
    details?: unknown,
  ) {
    super(503, 'store_unavailable', message, details);
  }
}

/** `--server` named a cds serve that did not answer (the CLI's own failure; nothing was sent). */
export class ServerUnreachableError extends AppError {
  constructor(server: string, cause: string) {
    super(
      503,
      'server_unreachable',
      `could not reach ${server} (${cause}); is cds serve running there?`,
    );
  }
}

/**
 * The database file is held by another process (design §1: one owner process). What to do
 * instead depends on the command: an admin command goes to the running server with `--server`.
 */
export class StoreLockedError extends AppError {
  constructor(
    readonly databasePath: string,
    readonly holder: { pid: number; command: string } | null,
    remedy = 'Stop it, or send this command to the running server with --server http://HOST:PORT',
  ) {
    const who = holder ? `process ${holder.pid} (${holder.command})` : 'another process';
    super(503, 'store_locked', `${databasePath} is held by ${who}. ${remedy}`);
  }

  /** The same refusal, for a command that cannot go through the server. */
  instead(remedy: string): StoreLockedError {
    return new StoreLockedError(this.databasePath, this.holder, remedy);
  }
}

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown };
}

export function errorBody(error: AppError): ErrorBody {
  const body: ErrorBody = { error: { code: error.code, message: error.message } };
  if (error.details !== undefined) body.error.details = error.details;
  return body;
}

/**
 * The installation is broken: a statement the code asks for is not in `sql/` (a partial upgrade,
 * a file removed). A fault of the machine, not of the lines: ingest fails the batch as it is
 * rather than quarantining every line of it, and tries again once the files are right.
 */
export class MissingStatementError extends AppError {
  constructor(name: string, dir: string) {
    super(
      500,
      'internal',
      `no SQL statement named ${name} in ${dir}: the installation is incomplete`,
    );
  }
}
