/** One event of a message of the events stream, as an owner ingests it. */
export interface BusEvent {
  tenantId: string;
  workspaceId: string;
  /** The stream sequence of the message it came in: a request chunk (docs/cluster-design.md §3). */
  seq: number;
  /** Its place among its message's events, from 0. */
  index: number;
  /**
   * Whether it is its message's last event: a batch records a message's sequence as in only with
   * its last event, so a message whose events were split between batches (a bisect) is
   * delivered again whole after a crash between them, never skipped half ingested.
   */
  endsMessage: boolean;
  /** Its landing line, as the collector wrote it. */
  data: Uint8Array;
}
