export interface LogRecord {
  level: number;
  component?: string;
  msg: string;
  [field: string]: unknown;
}

/** Every line a cds process writes to stderr off a terminal is one JSON record of its log. */
export function logRecords(stderr: string): LogRecord[] {
  return stderr
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as LogRecord);
}

/** The records at level warn (40) or above. */
export function logProblems(stderr: string): LogRecord[] {
  return logRecords(stderr).filter((record) => record.level >= 40);
}
