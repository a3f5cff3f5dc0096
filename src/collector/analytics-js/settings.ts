/** How many events analytics.js gathers before it sends a batch, and how long it waits at most. */
const BATCH_SIZE = 10;
const BATCH_TIMEOUT_MS = 5000;

/**
 * The settings document analytics.js asks for at `/v1/projects/{key}/settings`: one destination,
 * Segment.io, pointed at this cds (`apiHost` is a host and path, without a scheme), batching
 * through `/v1/b`; no other integration, middleware or remote plugin (each would load code from
 * Segment's CDN), remote metrics off (`sampleRate` 0: the library would post them to
 * api.segment.io), and the workspace's consent categories. docs/decisions.md "Browser write keys
 * and analytics.js from cds".
 */
export function settingsDocument(
  writeKey: string,
  origin: string,
  consentCategories: readonly string[],
): Record<string, unknown> {
  const url = new URL(origin);
  const apiHost = `${url.host}/v1`;
  return {
    integrations: {
      'Segment.io': {
        apiKey: writeKey,
        apiHost,
        protocol: url.protocol.replace(':', ''),
        addBundledMetadata: true,
        unbundledIntegrations: [],
        maybeBundledConfigIds: {},
        retryQueue: true,
        deliveryStrategy: {
          strategy: 'batching',
          config: { size: BATCH_SIZE, timeout: BATCH_TIMEOUT_MS },
        },
      },
    },
    plan: {
      track: { __default: { enabled: true, integrations: {} } },
      identify: { __default: { enabled: true } },
      group: { __default: { enabled: true } },
    },
    metrics: { sampleRate: 0, maxQueueSize: 0, host: apiHost },
    remotePlugins: [],
    enabledMiddleware: {},
    middlewareSettings: {},
    legacyVideoPluginsEnabled: false,
    edgeFunction: {},
    analyticsNextEnabled: true,
    // The workspace's categories, for a consent wrapper to ask about. cds is no destination a
    // category maps to: its events carry the choices, and cds enforces them where data leaves
    // (docs/decisions.md "Consent"), so a wrapper must not hold them back.
    consentSettings: { allCategories: [...consentCategories], hasUnmappedDestinations: true },
  };
}

/**
 * What RudderStack's browser SDK v3 asks its config URL (`/sourceConfig/?…&writeKey=…`): a source
 * of the key's workspace with no destination (each would load a device-mode SDK from RudderStack's
 * CDN) and its error reports off (they would be posted to `/rsaMetrics`). The SDK sends to the
 * data plane URL its page names, which is this cds. docs/decisions.md "RudderStack's browser SDK".
 */
export function sourceConfigDocument(
  writeKey: string,
  principal: { tokenId: string; tenantId: string; workspaceId: string },
): Record<string, unknown> {
  return {
    isHosted: false,
    source: {
      id: principal.tokenId,
      name: principal.workspaceId,
      writeKey,
      workspaceId: `${principal.tenantId}/${principal.workspaceId}`,
      enabled: true,
      config: { statsCollection: { errors: { enabled: false }, metrics: { enabled: false } } },
      destinations: [],
    },
  };
}
