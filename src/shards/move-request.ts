import { AppError, ConflictError, NotFoundError, ValidationError } from '../errors.js';
import type { Owners } from './owners.js';
import type { ShardAssignment, ShardEntry, ShardMap } from './shard-map.js';

/** The shape of a shard name (config `shard`): each is its own key token in `cds_owners`. */
export const SHARD_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

export function checkShardName(shard: string, field = 'shard'): void {
  if (!SHARD_NAME.test(shard))
    throw ValidationError.field(
      field,
      'must be 1-64 of a-z, 0-9, _ and -, starting with a letter or digit',
    );
}

/** The move did not end within the time the operator gave it. */
export class MoveTimeoutError extends AppError {
  constructor(tenantId: string, target: string, last: ShardAssignment) {
    super(
      504,
      'move_timeout',
      `tenant ${tenantId} is not active on shard ${target} yet (it is ${describeAssignment(last)}); the owners go on with the move: watch it with cds shards list`,
    );
  }
}

/** The owners gave the move up: the tenant is active again, but not on the target. */
export class MoveAbandonedError extends AppError {
  constructor(tenantId: string, target: string, last: ShardAssignment) {
    super(
      409,
      'move_abandoned',
      `the move of tenant ${tenantId} to shard ${target} was given up: it is ${describeAssignment(last)}`,
    );
  }
}

export function describeAssignment(assignment: ShardAssignment): string {
  switch (assignment.state) {
    case 'active':
      return `active on shard ${assignment.shard}`;
    case 'moving':
      return `moving from shard ${assignment.shard} to shard ${assignment.to ?? '(unknown)'}`;
    case 'copied':
      return `copied from shard ${assignment.shard} to shard ${assignment.to ?? '(unknown)'}${assignment.seq === undefined ? '' : ` up to stream sequence ${assignment.seq}`}`;
  }
}

/**
 * Asks the owners to move a tenant: its entry goes from `active` on its shard to `moving` to
 * `target`. The owners do the rest (the shard it leaves stops and marks it `copied`, the target
 * takes it and marks it `active`). Refused for an unknown tenant, a tenant already on `target` or
 * already moving, and a target no owner has announced (nobody would take it).
 */
export async function requestMove(
  map: ShardMap,
  owners: Owners,
  tenantId: string,
  target: string,
): Promise<ShardEntry> {
  checkShardName(target);
  const entry = await map.get(tenantId);
  if (!entry)
    throw new NotFoundError(
      `tenant ${tenantId} is not in the shard map; assign it with cds shards assign`,
    );
  const { assignment } = entry;
  if (assignment.state !== 'active')
    throw new ConflictError(
      `tenant ${tenantId} is already ${describeAssignment(assignment)}; wait for that move to end`,
    );
  if (assignment.shard === target)
    throw new ConflictError(`tenant ${tenantId} is already on shard ${target}`);
  if (!owners.of(target))
    throw new ConflictError(
      `no owner has announced itself for shard ${target}; start cds serve --shard ${target} first`,
    );
  return map.change(entry, { shard: assignment.shard, state: 'moving', to: target });
}

/**
 * Waits until the tenant is `active` on `target`, telling `onState` of each state its entry
 * passes (those the watch delivers; a state that lasted less than a watch round may be skipped).
 */
export async function awaitMove(
  map: ShardMap,
  requested: ShardEntry,
  target: string,
  options: { timeoutMs: number; onState: (assignment: ShardAssignment) => void },
): Promise<ShardEntry> {
  let last = requested;
  let settle!: (outcome: ShardEntry | Error) => void;
  const outcome = new Promise<ShardEntry | Error>((resolve) => {
    settle = resolve;
  });
  const watch = await map.watch((tenantId, entry) => {
    if (tenantId !== requested.tenantId || !entry || entry.revision <= last.revision) return;
    last = entry;
    options.onState(entry.assignment);
    const { assignment } = entry;
    if (assignment.state !== 'active') return;
    settle(
      assignment.shard === target
        ? entry
        : new MoveAbandonedError(requested.tenantId, target, assignment),
    );
  });
  const timer = setTimeout(
    () => settle(new MoveTimeoutError(requested.tenantId, target, last.assignment)),
    options.timeoutMs,
  );
  try {
    const result = await outcome;
    if (result instanceof Error) throw result;
    return result;
  } finally {
    clearTimeout(timer);
    watch.stop();
  }
}
