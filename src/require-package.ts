/**
 * Loads a package with `require`, from our ESM modules. Used for CommonJS packages of many files
 * (Fastify, DuckDB): imported from ESM, Node scans each of their files for the names it exports
 * (cjs-module-lexer), which doubled DuckDB's load time at every start. And for packages loaded on
 * first use (pino, prom-client, libphonenumber's metadata), since `require` is synchronous.
 * `node:module` itself is reached only at the first call: importing it loads Node's source-map
 * support, about 10 ms that `cds --version` and `--help` need not pay.
 */
export function requirePackage<T>(name: string): T {
  return process.getBuiltinModule('node:module').createRequire(import.meta.url)(name) as T;
}
