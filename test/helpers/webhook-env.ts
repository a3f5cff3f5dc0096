import { configuredSender, type WebhookSender } from '../../src/webhooks/sender.js';
import type { TestEnv } from './context.js';
import { Receiver } from './receiver.js';
import { openSeededEnv } from './seeded.js';
import type { Tokens } from './tenant.js';

export interface WebhookEnv {
  env: TestEnv;
  tokens: Tokens;
  /** Where the server's webhooks go. */
  receiver: Receiver;
  sender: WebhookSender;
}

/** A seeded env with a collector whose webhooks, signed with `secret`, go to a fresh receiver. */
export async function openWebhookEnv(secret: string): Promise<WebhookEnv> {
  const receiver = await Receiver.start();
  const { env, tokens } = await openSeededEnv({
    collector: true,
    config: { webhook_url: receiver.url, webhook_secret: secret, webhook_retry_base_ms: 20 },
  });
  return { env, tokens, receiver, sender: configuredSender(env.context) as WebhookSender };
}
