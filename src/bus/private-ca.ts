import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The PEM files of a private certificate authority and what it signed. */
export interface PrivateCa {
  /** The CA's certificate: what `--bus-ca` and the nodes' `ca_file` name. */
  caFile: string;
  /** A certificate for the nodes, good for serving and for routes (client and server use). */
  serverCert: string;
  serverKey: string;
  /** A certificate a cds process presents with `--bus-cert` / `--bus-key`. */
  clientCert: string;
  clientKey: string;
}

const OPENSSL = '/usr/bin/openssl';

/** Debian's `openssl` package puts it in /usr/bin; scripts/system-packages.sh installs it. */
function opensslPath(): string {
  if (!existsSync(OPENSSL))
    throw new Error(
      `openssl is not installed (${OPENSSL}); run scripts/system-packages.sh, or apt-get install openssl`,
    );
  return OPENSSL;
}

/**
 * Makes a private CA in `dir`, and a node certificate for `hosts` (IP addresses or DNS names) and
 * a client certificate signed by it, with the `openssl` CLI as an operator would: the local
 * cluster's nodes speak TLS with it, so every cluster test connects as a production client does.
 * P-256 keys, valid ten days.
 */
export async function makePrivateCa(dir: string, hosts: readonly string[]): Promise<PrivateCa> {
  const openssl = opensslPath();
  const path = (name: string) => join(dir, name);
  const ca: PrivateCa = {
    caFile: path('ca.pem'),
    serverCert: path('node.pem'),
    serverKey: path('node-key.pem'),
    clientCert: path('client.pem'),
    clientKey: path('client-key.pem'),
  };
  const issue = (
    out: string,
    keyOut: string,
    subject: string,
    extensions: string[],
    signer: string[],
  ) =>
    run(openssl, [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-noenc',
      '-keyout',
      keyOut,
      '-out',
      out,
      '-days',
      '10',
      '-subj',
      subject,
      ...extensions.flatMap((extension) => ['-addext', extension]),
      ...signer,
    ]);
  const caKey = path('ca-key.pem');
  await issue(
    ca.caFile,
    caKey,
    '/CN=cds bus CA',
    ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign'],
    [],
  );
  const byCa = ['-CA', ca.caFile, '-CAkey', caKey];
  const altNames = hosts
    .map((host) => (/^[\d.]+$|:/.test(host) ? `IP:${host}` : `DNS:${host}`))
    .join(',');
  // A node's certificate serves clients and, on routes, is also presented as a client's.
  await issue(
    ca.serverCert,
    ca.serverKey,
    '/CN=cds bus node',
    [
      'basicConstraints=critical,CA:FALSE',
      `subjectAltName=${altNames}`,
      'extendedKeyUsage=serverAuth,clientAuth',
    ],
    byCa,
  );
  await issue(
    ca.clientCert,
    ca.clientKey,
    '/CN=cds bus client',
    ['basicConstraints=critical,CA:FALSE', 'extendedKeyUsage=clientAuth'],
    byCa,
  );
  return ca;
}
