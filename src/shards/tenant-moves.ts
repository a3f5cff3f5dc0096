import { unlink, writeFile } from 'node:fs/promises';
import { publishRegistry } from '../collector/runtime.js';
import type { Context } from '../context.js';
import { ConflictError, OwnerUnavailableError } from '../errors.js';
import { componentLog } from '../telemetry/log.js';
import { operatorToken } from '../tenancy/operator.js';
import type { Owners } from './owners.js';
import type { ShardEntry, ShardMap } from './shard-map.js';
import type { StreamLoop } from './stream-loop.js';
import {
  deleteTenantRows,
  exportTenantTable,
  holdsTenant,
  importTenantRows,
  moveFile,
  offsetOf,
  tenantTable,
  tenantTables,
} from './tenant-rows.js';

const log = () => componentLog('owner');

/** Where shard B fetches one table of tenant T's rows from shard A (`tenantRowsRoutes`). */
export function tenantRowsPath(tenantId: string, table: string): string {
  return `/v1/operator/shards/tenants/${encodeURIComponent(tenantId)}/rows/${encodeURIComponent(table)}`;
}

/**
 * What this shard does when a tenant's entry in the shard map changes (docs/cluster-design.md §5).
 * Moving T from A to B:
 * 1. `cds shards move` sets `{shard: A, state: moving, to: B}`;
 * 2. A stops fetching T, lets the batch under way commit, and sets `{A, copied, to: B, seq: S}`;
 * 3. B fetches T's rows from A (every owner has the operator token: they share the master key),
 *    imports them in one transaction with T's `bus_offsets`, and sets `{B, active}`;
 * 4. B takes T (the restart rule starts its consumer right after S); A deletes T's rows.
 * Each step reads only the entry and the database, so a crash at any point resumes from the map,
 * and T's events wait in the stream meanwhile: nothing is lost or doubled.
 */
export class TenantMoves {
  constructor(
    private readonly context: Context,
    private readonly map: ShardMap,
    private readonly loop: StreamLoop,
    private readonly owners: Owners,
    private readonly shard: string,
  ) {}

  async follow(tenantId: string, entry: ShardEntry | null): Promise<void> {
    const taken = this.loop.tenants().includes(tenantId);
    if (entry === null) {
      if (taken) await this.loop.release(tenantId);
      return;
    }
    const { assignment } = entry;
    const here = assignment.shard === this.shard;
    if (here && assignment.state === 'active') {
      if (!taken) {
        await this.loop.take([tenantId]);
        log().info({ tenant_id: tenantId, shard: this.shard }, 'tenant taken');
      }
    } else if (here && assignment.state === 'moving') {
      await this.handOver(entry, taken);
    } else if (!here && assignment.state === 'copied' && assignment.to === this.shard) {
      await this.copyIn(entry);
    } else if (!here) {
      if (taken) await this.loop.release(tenantId);
      if (assignment.state === 'active' && (await holdsTenant(this.context, tenantId)))
        await this.dropCopy(tenantId, assignment.epoch, assignment.shard);
    }
  }

  /**
   * Step 4 on A. Only a tenant that was moved (epoch past its first assignment) is deleted: rows
   * of a tenant assigned elsewhere from the start mean two databases were given the same tenant,
   * which an operator must look at, not a move that finished.
   */
  private async dropCopy(tenantId: string, epoch: number, owner: string): Promise<void> {
    if (epoch <= 1) {
      log().error(
        { tenant_id: tenantId, shard: owner },
        'this database holds a tenant assigned to another shard from the start; its rows are left as they are',
      );
      return;
    }
    await deleteTenantRows(this.context, tenantId);
    // Forgets the key it put: B has put it since, so the delete is refused and the key stays.
    await publishRegistry(this.context);
    log().info(
      { tenant_id: tenantId, shard: owner },
      'tenant rows deleted: another shard owns it now',
    );
  }

  /** Step 2: stop consuming T, then say where it stopped. */
  private async handOver(entry: ShardEntry, taken: boolean): Promise<void> {
    const { tenantId } = entry;
    const lastSeq = taken
      ? await this.loop.release(tenantId)
      : await offsetOf(this.context, tenantId);
    await this.map.change(entry, {
      shard: this.shard,
      state: 'copied',
      to: entry.assignment.to as string,
      ...(lastSeq === null ? {} : { seq: lastSeq }),
    });
    log().info(
      { tenant_id: tenantId, to: entry.assignment.to, seq: lastSeq },
      'tenant handed over: its rows are ready to copy',
    );
  }

  /** Step 3: fetch T's rows from A, import them whole, and take T over. */
  private async copyIn(entry: ShardEntry): Promise<void> {
    const { tenantId } = entry;
    const from = this.owners.of(entry.assignment.shard);
    if (from === null) throw new OwnerUnavailableError(entry.assignment.shard, 'none announced');
    const token = operatorToken(this.context.dataDir.masterKey);
    const tables = await this.context.store.read(tenantTables);
    const files = new Map<string, string>();
    try {
      for (const table of tables) {
        const response = await fetch(
          new URL(tenantRowsPath(tenantId, table.table_name), from.url),
          {
            headers: { authorization: `Bearer ${token}` },
          },
        );
        if (!response.ok)
          throw new OwnerUnavailableError(
            entry.assignment.shard,
            `${response.status} for the rows of ${table.table_name}`,
          );
        const path = await moveFile(this.context, table.table_name);
        files.set(table.table_name, path);
        await writeFile(path, Buffer.from(await response.arrayBuffer()));
      }
      await importTenantRows(this.context, tenantId, files);
    } finally {
      await Promise.all([...files.values()].map((path) => unlink(path).catch(() => undefined)));
    }
    // The registry key becomes this shard's before A can drop its copy: A deletes only the
    // revision it put, so collectors never lose the tenant between the two.
    await publishRegistry(this.context);
    await this.map.change(entry, { shard: this.shard, state: 'active' });
    log().info(
      { tenant_id: tenantId, from: entry.assignment.shard, seq: entry.assignment.seq ?? null },
      'tenant copied in; it is consumed from the sequence after the copy',
    );
  }

  /**
   * One table of T's rows as Parquet, for shard B: only while T is `copied` from this shard, when
   * nothing here writes them any more.
   */
  async exportTable(tenantId: string, tableName: string): Promise<string> {
    const entry = await this.map.get(tenantId);
    if (entry?.assignment.shard !== this.shard || entry.assignment.state !== 'copied')
      throw new ConflictError(`tenant ${tenantId} is not being copied from shard ${this.shard}`);
    const table = await tenantTable(this.context, tableName);
    if (table === null) throw new ConflictError(`${tableName} holds no tenant rows`);
    const path = await moveFile(this.context, table.table_name);
    await exportTenantTable(this.context, tenantId, table, path);
    return path;
  }
}
