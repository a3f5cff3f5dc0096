import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppError } from '../../errors.js';
import { PACKAGE_ROOT } from '../../package-root.js';

/** Where the pinned `@segment/analytics-next` keeps its browser builds. */
const UMD_DIR = join(PACKAGE_ROOT, 'node_modules', '@segment', 'analytics-next', 'dist', 'umd');

/** The standalone build the snippet loads as `analytics.min.js`. */
const STANDALONE = 'standalone.js';

/** The chunks it loads after itself, by the names webpack gave them. */
const CHUNK_NAME = /^[A-Za-z0-9_-]+\.bundle\.[0-9a-f]+\.js$/;

/** The hosts the build falls back to where it cannot tell where it was loaded from. */
const SEGMENT_CDN = 'https://cdn.segment.com';
const SEGMENT_API = 'api.segment.io/v1';

/** How many origins' rewritten copies are kept (a deployment is reached under one or two). */
const KEPT_ORIGINS = 8;

/**
 * The library's files, read once from the npm package, each rewritten for the origin it is served
 * under: its fallbacks to Segment's CDN and API name this cds instead, so a page whose snippet
 * names this host loads everything from it and sends nothing to Segment even where the build
 * cannot read its own address (over plain HTTP, or when its settings fail to load).
 */
export class AnalyticsLibrary {
  private files = new Map<string, Promise<string>>();
  private chunkNames: Promise<Set<string>> | null = null;
  private rewritten = new Map<string, string>();

  /** The standalone build, for `/analytics.js/v1/{key}/analytics.min.js`. */
  standalone(origin: string): Promise<string> {
    return this.servedAs(STANDALONE, origin);
  }

  /** A chunk of `/analytics-next/bundles/`, or null for a name the package does not hold. */
  async chunk(name: string, origin: string): Promise<string | null> {
    if (!CHUNK_NAME.test(name)) return null;
    this.chunkNames ??= readdir(UMD_DIR).then(
      (names) => new Set(names.filter((entry) => CHUNK_NAME.test(entry))),
      () => new Set(),
    );
    if (!(await this.chunkNames).has(name)) return null;
    return this.servedAs(name, origin);
  }

  private async servedAs(name: string, origin: string): Promise<string> {
    const key = `${name}\0${origin}`;
    const kept = this.rewritten.get(key);
    if (kept !== undefined) return kept;
    let text = this.files.get(name);
    if (!text) {
      text = readFile(join(UMD_DIR, name), 'utf8');
      this.files.set(name, text);
    }
    const original = await text.catch((error: unknown) => {
      this.files.delete(name);
      throw new AppError(
        503,
        'library_missing',
        `analytics.js is not installed here (${(error as Error).message}): run npm ci`,
      );
    });
    const host = origin.replace(/^https?:\/\//, '');
    const served = original.replaceAll(SEGMENT_CDN, origin).replaceAll(SEGMENT_API, `${host}/v1`);
    if (this.rewritten.size >= KEPT_ORIGINS * 4) this.rewritten.clear();
    this.rewritten.set(key, served);
    return served;
  }
}
