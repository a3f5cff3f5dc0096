/**
 * Everything cds keeps is private to the user running it (design §15): landing files hold plain
 * identifiers until ingested, and the database and snapshots hold profiles.
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/**
 * Set by the CLI before anything is created, so that files made by DuckDB (the database, its
 * WAL, snapshots, the erasure rewrite's copy) and by any later code are private too.
 */
export const PRIVATE_UMASK = 0o077;
