import { readFileSync, type Stats, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { ConfigError } from './errors.js';

const commaList = z.preprocess(
  (value) =>
    typeof value === 'string'
      ? value
          .split(',')
          .map((item) => item.trim())
          .filter(Boolean)
      : value,
  z.array(z.string().min(1)),
);

const jsonObject = z.preprocess(
  (value, context) => {
    if (typeof value !== 'string') return value;
    try {
      return JSON.parse(value);
    } catch (error) {
      context.addIssue({
        code: 'custom',
        message: `is not valid JSON (${(error as Error).message})`,
      });
      return z.NEVER;
    }
  },
  z.record(z.string(), z.array(z.string())),
);

const SIZE_UNITS: ReadonlyMap<string, number> = new Map([
  ['kb', 1e3],
  ['mb', 1e6],
  ['gb', 1e9],
  ['kib', 2 ** 10],
  ['mib', 2 ** 20],
  ['gib', 2 ** 30],
]);

/** A size as the settings write it (`16MB`, `512KiB`), in bytes. */
function bytesOf(size: string): number {
  const [, number, unit] = /^(\d+(?:\.\d+)?)\s*([a-z]+)$/i.exec(size) as RegExpExecArray;
  return Math.round(Number(number) * (SIZE_UNITS.get((unit as string).toLowerCase()) as number));
}

/** Every configuration key of design §4 with its default. */
const configSchema = z.object({
  data_dir: z.string().min(1).default('./cds-data'),
  port: z.coerce.number().int().min(0).max(65535).default(8080),
  host: z.string().min(1).default('127.0.0.1'),
  /** Allowed browser origins per tenant id. */
  cors_origins: jsonObject.default({}),
  plaintext_identifier_types: commaList.default(['email', 'phone']),
  webhook_url: z.url().optional(),
  webhook_secret: z.string().startsWith('whsec_').optional(),
  /** First retry delay of a failed webhook; each next one doubles, up to an hour apart. */
  webhook_retry_base_ms: z.coerce.number().int().positive().default(5000),
  ingest_interval_ms: z.coerce.number().int().positive().default(1000),
  /** A landing file is sealed, and so ingested, this long after it was opened at the latest. */
  landing_max_age_ms: z.coerce.number().int().positive().default(2000),
  max_batch_events: z.coerce.number().int().positive().default(250_000),
  /**
   * Collector requests per second before 429: for each browser (tenant, workspace) pair and for
   * each collector token, the single and batch endpoints counted together.
   */
  collector_rate_limit: z.coerce.number().int().positive().default(1000),
  /** Control-plane requests per second each token (the operator's included) may make before 429. */
  control_plane_rate_limit: z.coerce.number().int().positive().default(100),
  /**
   * Requests per second one client address may have refused for their credentials or scope
   * (unknown token, tenant or workspace) before the next ones get 429 unlooked-at.
   */
  refused_rate_limit: z.coerce.number().int().positive().default(20),
  /** What one tenant may hold at most (writes beyond answer 409 quota_exceeded). */
  quota_workspaces: z.coerce.number().int().positive().default(100),
  quota_segments: z.coerce.number().int().positive().default(1000),
  quota_metric_definitions: z.coerce.number().int().positive().default(500),
  quota_event_types: z.coerce.number().int().positive().default(500),
  /** Each declared type is a column of every identity step of ingest for the tenant. */
  quota_identifier_types: z.coerce.number().int().positive().default(50),
  /** Tokens not revoked, of every kind. */
  quota_tokens: z.coerce.number().int().positive().default(1000),
  master_key: z.string().optional(),
  /**
   * Cluster mode (issue 30): the NATS servers of the bus, `nats://host:port` each. Unset, cds runs
   * embedded: landing files and one DuckDB file.
   */
  bus: commaList
    .pipe(z.array(z.string().regex(/^(nats|tls):\/\/[^\s,]+$/, 'must be nats://host:port')).min(1))
    .optional(),
  /** The file of this process's bus credentials: `{"user","password"}` JSON or an nkey seed. */
  bus_creds: z.string().min(1).optional(),
  /** The PEM file of the CA that signed the NATS nodes' certificates; unset, Node's default CAs. */
  bus_ca: z.string().min(1).optional(),
  /** The PEM client certificate and key this process presents, for nodes that verify clients. */
  bus_cert: z.string().min(1).optional(),
  bus_key: z.string().min(1).optional(),
  /**
   * Cluster mode: how long a collector retries an event the stream did not acknowledge before it
   * answers 503 `bus_unavailable` (and an owner a registry put). 20 s rides out a leader election
   * (docs/cluster-design.md §3); a test or an operator who prefers failing fast may shorten it.
   */
  bus_publish_budget_ms: z.coerce.number().int().positive().default(20_000),
  /**
   * Cluster mode: an owner answers `/readyz` 503 `ingest_behind` once the oldest event of its
   * stream backlog is older than this, or its ingest has failed (or its backlog been unreadable)
   * for this long. A minute is far above the second or two a keeping-up owner lags.
   */
  bus_ready_max_lag_ms: z.coerce.number().int().positive().default(60_000),
  /**
   * Cluster mode: how often an owner reads its consumers' backlog for `/readyz` and `/metrics`
   * (one consumer info per tenant, and one message read per tenant with a backlog). A shorter
   * interval turns readiness sooner after a catch-up or an outage, for more requests to the bus.
   */
  bus_backlog_interval_ms: z.coerce.number().int().positive().default(5000),
  /** Cluster mode: the shard this `cds serve` owns (docs/scaling.md). */
  shard: z
    .string()
    .regex(
      /^[a-z0-9][a-z0-9_-]{0,63}$/,
      'must be 1-64 of a-z, 0-9, _ and -, starting with a letter or digit',
    )
    .optional(),
  /**
   * Cluster mode: the shard a new tenant goes to when the shard map names none for it; unset, the
   * shard of the owner that was asked to create it.
   */
  default_shard: z
    .string()
    .regex(
      /^[a-z0-9][a-z0-9_-]{0,63}$/,
      'must be 1-64 of a-z, 0-9, _ and -, starting with a letter or digit',
    )
    .optional(),
  /** Cluster mode: the URL other owners forward this shard's requests to; unset, the address listened on. */
  advertise_url: z.url().optional(),
  /**
   * DuckDB's buffer pool limit (`384MB`, `2GB`); unset, DuckDB takes 80% of RAM. The database never
   * spills to disk, so an operation needing more fails and rolls back.
   */
  memory_limit: z
    .string()
    .regex(/^\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i, 'must be a size such as 384MB or 2GB')
    .optional(),
  /**
   * How much DuckDB's log may hold before the store checkpoints it into the database file (`16MiB`
   * by default, DuckDB's own threshold and the store's when opened without it); an ingest batch of 50,000 lines or more is checkpointed
   * at once whatever the log holds. Lower, small batches' rows reach the file sooner and the log
   * replayed at start is shorter; higher, fewer checkpoints.
   */
  checkpoint_threshold: z
    .string()
    .regex(/^\d+(\.\d+)?\s*(KB|MB|GB|KiB|MiB|GiB)$/i, 'must be a size such as 16MB or 512KB')
    .default('16MiB')
    .transform(bytesOf),
});

export type Config = z.infer<typeof configSchema>;
export type ConfigInput = Partial<Record<keyof Config, unknown>>;

const keys = Object.keys(configSchema.shape) as (keyof Config)[];

function fromEnv(env: NodeJS.ProcessEnv): ConfigInput {
  const found: ConfigInput = {};
  for (const key of keys) {
    const value = env[`CDS_${key.toUpperCase()}`];
    if (value !== undefined && value !== '') found[key] = value;
  }
  return found;
}

/** The settings of `cds.config.json`; a key that is no setting is refused, not ignored. */
function fromFile(path: string): ConfigInput {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return {};
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(path, `is not valid JSON (${(error as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(path, 'must be a JSON object of settings');
  }
  for (const key of Object.keys(parsed)) {
    if (!(keys as string[]).includes(key)) {
      throw new ConfigError(
        `${path}: ${JSON.stringify(key)}`,
        'is not a setting (docs: README, Configuration)',
      );
    }
  }
  return parsed as ConfigInput;
}

function definedOnly(input: ConfigInput): ConfigInput {
  return Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined));
}

/**
 * A data dir that is a file, or lies under one, is a setting cds cannot run with; one that does
 * not exist yet is the command's to make or refuse.
 */
export function checkDataDir(dataDir: string, source = '--data-dir (or CDS_DATA_DIR)'): void {
  let stats: Stats | undefined;
  try {
    stats = statSync(dataDir, { throwIfNoEntry: false });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOTDIR') throw error;
    throw new ConfigError(source, `${dataDir} lies under a file; the data dir must be a folder`);
  }
  if (stats && !stats.isDirectory()) {
    throw new ConfigError(source, `${dataDir} is a file; the data dir must be a folder`);
  }
}

/** Flags win over `CDS_*` environment variables, which win over `cds.config.json` in the data dir. */
export function loadConfig(flags: ConfigInput = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const fromFlags = definedOnly(flags);
  const fromVariables = definedOnly(fromEnv(env));
  const early = { ...fromVariables, ...fromFlags };
  const dataDir = resolve(String(early.data_dir ?? configSchema.shape.data_dir.parse(undefined)));
  checkDataDir(
    dataDir,
    Object.hasOwn(fromVariables, 'data_dir') && !Object.hasOwn(fromFlags, 'data_dir')
      ? 'CDS_DATA_DIR'
      : undefined,
  );
  const filePath = join(dataDir, 'cds.config.json');
  const merged = { ...fromFile(filePath), ...early, data_dir: dataDir };
  const parsed = configSchema.safeParse(merged);
  if (!parsed.success) {
    const [issue] = parsed.error.issues;
    const key = String(issue?.path[0] ?? '');
    const source = Object.hasOwn(fromFlags, key)
      ? `--${key.replaceAll('_', '-')} (or CDS_${key.toUpperCase()})`
      : Object.hasOwn(fromVariables, key)
        ? `CDS_${key.toUpperCase()}`
        : `${filePath}: ${key}`;
    const within = issue && issue.path.length > 1 ? ` at ${issue.path.slice(1).join('.')}` : '';
    throw new ConfigError(source, `${issue?.message ?? 'is invalid'}${within}`);
  }
  return parsed.data;
}
