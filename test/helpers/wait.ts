/** Polls `done` every 50 ms until it holds; fails, naming `what`, after `timeoutMs`. */
export async function waitUntil(
  done: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
): Promise<void> {
  for (let waited = 0; !(await done()); waited += 50) {
    if (waited >= timeoutMs) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
