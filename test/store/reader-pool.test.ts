import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ReaderPool } from '../../src/store/reader-pool.js';

/** Lets the callbacks already due run, such as a read handed the connection it waited for. */
const pendingCallbacksRun = () => new Promise((resolve) => setImmediate(resolve));

describe('ReaderPool', () => {
  let instance: DuckDBInstance;
  let connections: DuckDBConnection[];
  let pool: ReaderPool;

  beforeEach(async () => {
    instance = await DuckDBInstance.create(':memory:');
    connections = await Promise.all([instance.connect(), instance.connect()]);
    pool = new ReaderPool(connections.length);
    for (const connection of connections) pool.release(connection);
  });

  afterEach(() => {
    for (const connection of connections) connection.closeSync();
    instance.closeSync();
  });

  it('gives each read a connection of its own, and a read beyond them the first one freed', async () => {
    const started: DuckDBConnection[] = [];
    const finish: (() => void)[] = [];
    const holdingRead = () =>
      pool.withOne(
        (connection) =>
          new Promise<void>((resolve) => {
            started.push(connection);
            finish.push(resolve);
          }),
      );
    const first = holdingRead();
    const second = holdingRead();
    const third = pool.withOne(async (connection) => connection);
    await pendingCallbacksRun();
    expect(new Set(started).size).toBe(2);
    finish[0]?.();
    await first;
    expect(await third).toBe(started[0]);
    finish[1]?.();
    await second;
  });

  it('runs work that needs every connection once no read runs, and holds new reads until it is done', async () => {
    const happened: string[] = [];
    let finishRead = () => {};
    const read = pool.withOne(
      () =>
        new Promise<void>((resolve) => {
          finishRead = () => {
            happened.push('read');
            resolve();
          };
        }),
    );
    let finishAll = () => {};
    const all = pool.withAll(
      () =>
        new Promise<void>((resolve) => {
          happened.push('all started');
          finishAll = () => {
            happened.push('all done');
            resolve();
          };
        }),
    );
    const later = pool.withOne(async () => {
      happened.push('later read');
    });
    await pendingCallbacksRun();
    expect(happened).toEqual([]);
    finishRead();
    await read;
    await pendingCallbacksRun();
    expect(happened).toEqual(['read', 'all started']);
    finishAll();
    await Promise.all([all, later]);
    expect(happened).toEqual(['read', 'all started', 'all done', 'later read']);
  });

  it('hands out only the idle connections when taken for good', async () => {
    let finishRead = () => {};
    const read = pool.withOne(
      () =>
        new Promise<void>((resolve) => {
          finishRead = resolve;
        }),
    );
    await pendingCallbacksRun();
    expect(pool.takeIdle()).toHaveLength(1);
    expect(pool.takeIdle()).toHaveLength(0);
    finishRead();
    await read;
  });
});
