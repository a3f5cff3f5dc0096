/** The largest body any route takes: a collector batch (design §8). */
export const BODY_LIMIT_BYTES = 1024 * 1024;
