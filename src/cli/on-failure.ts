/**
 * Awaits `work`; if it fails, runs `cleanUp` first (closing what was opened for it, so the process
 * can exit and the next command can open the database), then passes the failure on.
 */
export async function cleaningUpOnFailure<T>(
  work: Promise<T>,
  cleanUp: () => Promise<unknown>,
): Promise<T> {
  try {
    return await work;
  } catch (error) {
    await cleanUp();
    throw error;
  }
}
