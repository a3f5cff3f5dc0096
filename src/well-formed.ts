/** `String.prototype.isWellFormed` (ES2024, Node 20): false when a string holds a lone surrogate. */
export const isWellFormed = (text: string): boolean =>
  (text as string & { isWellFormed(): boolean }).isWellFormed();

/**
 * The path of the first string or key in a parsed JSON value that holds a lone UTF-16 surrogate
 * (which has no UTF-8 form, so DuckDB refuses it as JSON text), or null. Walked with a stack of
 * its own, never the call stack, so any nesting costs a walk and not the process.
 */
export function loneSurrogatePath(value: unknown): string | null {
  const stack: { value: unknown; path: string }[] = [{ value, path: '' }];
  const joined = (path: string, key: string) => (path === '' ? key : `${path}.${key}`);
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    if (typeof node.value === 'string') {
      if (!isWellFormed(node.value)) return node.path || 'body';
    } else if (typeof node.value === 'object' && node.value !== null) {
      // JSON.parse builds plain objects and arrays: for…in sees their own keys only.
      for (const key in node.value) {
        if (!isWellFormed(key)) return joined(node.path, key);
        stack.push({
          value: (node.value as Record<string, unknown>)[key],
          path: joined(node.path, key),
        });
      }
    }
  }
  return null;
}
