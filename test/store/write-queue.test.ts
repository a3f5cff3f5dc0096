import { describe, expect, it } from 'vitest';
import { WriteQueue } from '../../src/store/write-queue.js';

/** A promise and the function that settles it, to hold a step until the test lets it go. */
function gate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe('WriteQueue', () => {
  it('runs writes one after another in the order they were asked for, after a failed one too', async () => {
    const queue = new WriteQueue();
    const ran: string[] = [];
    const held = gate();
    const first = queue.inTurn(async () => {
      await held.opened;
      ran.push('first');
      throw new Error('first failed');
    });
    const second = queue.inTurn(async () => {
      ran.push('second');
      return 2;
    });
    held.open();
    await expect(first).rejects.toThrow('first failed');
    expect(await second).toBe(2);
    expect(ran).toEqual(['first', 'second']);
  });

  it('lets work that needs only the writer pass the writes queued, once the one running is done', async () => {
    const queue = new WriteQueue();
    const ran: string[] = [];
    const copying = gate();
    const snapshotTaken = gate();
    // A rewrite: queued, it takes its snapshot on the writer, then copies off it while the writes
    // queued after it wait.
    const rewrite = queue.enqueue(async () => {
      await queue.onWriter(async () => {
        ran.push('snapshot');
      });
      snapshotTaken.open();
      await copying.opened;
      ran.push('swap');
    });
    const queued = queue.inTurn(async () => {
      ran.push('queued write');
    });
    await snapshotTaken.opened;
    await queue.onWriter(async () => {
      ran.push('replayable write');
    });
    expect(ran).toEqual(['snapshot', 'replayable write']);
    copying.open();
    await Promise.all([rewrite, queued]);
    expect(ran).toEqual(['snapshot', 'replayable write', 'swap', 'queued write']);
  });

  it('is drained once everything queued so far has settled', async () => {
    const queue = new WriteQueue();
    const held = gate();
    let done = false;
    void queue
      .inTurn(async () => {
        await held.opened;
        done = true;
      })
      .catch(() => undefined);
    const drained = queue.drained();
    held.open();
    await drained;
    expect(done).toBe(true);
  });
});
