/** One message of the events stream, as an owner ingests it. */
export interface BusEvent {
  tenantId: string;
  workspaceId: string;
  /** Its stream sequence. */
  seq: number;
  /** The landing line a collector published (docs/cluster-design.md §3). */
  data: Uint8Array;
}
