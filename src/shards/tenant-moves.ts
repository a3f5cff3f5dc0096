import { componentLog } from '../telemetry/log.js';
import type { OwnerLoop } from './owner-loop.js';
import type { ShardEntry } from './shard-map.js';

const log = () => componentLog('owner');

/**
 * What this shard does when a tenant's entry in the shard map changes (docs/cluster-design.md §5).
 * Each step reads only the entry and the database, so a crash at any point resumes from the map.
 */
export class TenantMoves {
  constructor(
    private readonly loop: OwnerLoop,
    private readonly shard: string,
  ) {}

  async follow(tenantId: string, entry: ShardEntry | null): Promise<void> {
    const taken = this.loop.tenants().includes(tenantId);
    if (entry === null) {
      if (taken) await this.loop.release(tenantId);
      return;
    }
    const { assignment } = entry;
    if (assignment.shard === this.shard && assignment.state === 'active') {
      if (!taken) {
        await this.loop.take([tenantId]);
        log().info({ tenant_id: tenantId, shard: this.shard }, 'tenant taken');
      }
      return;
    }
    if (taken && assignment.shard !== this.shard) await this.loop.release(tenantId);
  }
}
