import { Command, Option } from 'commander';
import { withAdminClient } from '../admin-client.js';
import type { GlobalOptions } from '../admin-request.js';
import { cursorOption } from '../options.js';
import { output, printNextPage, printTable } from '../output.js';

export function webhooksCommand(): Command {
  const webhooks = new Command('webhooks').description('segment webhook deliveries (the outbox)');

  webhooks
    .command('list')
    .description('list deliveries, newest first')
    .option('--failed', 'only deliveries that gave up after 24 hours of retries')
    .addOption(
      new Option('--status <status>', 'only this status').choices([
        'pending',
        'delivered',
        'failed',
      ]),
    )
    .option('--limit <n>', 'how many (1-500)')
    .addOption(cursorOption())
    .action(
      async (
        options: { failed?: boolean; status?: string; limit?: string; cursor?: string },
        command: Command,
      ) => {
        const globals = command.optsWithGlobals<GlobalOptions>();
        const listing = await withAdminClient(globals, (client) =>
          client<{ webhooks: Record<string, unknown>[]; next_cursor: string | null }>({
            method: 'GET',
            path: '/v1/operator/webhooks',
            query: {
              status: options.failed ? 'failed' : options.status,
              limit: options.limit,
              cursor: options.cursor,
            },
          }),
        );
        output(globals.json, listing, (value) => {
          printTable(value.webhooks, [
            'webhook_id',
            'type',
            'segment_id',
            'profile_id',
            'status',
            'attempts',
            'created_at',
            'last_error',
          ]);
          printNextPage(value.next_cursor);
        });
      },
    );

  webhooks
    .command('retry [webhook_id]')
    .description('send failed deliveries again: one, or every failed one')
    .action(async (webhookId: string | undefined, _options: unknown, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const result = await withAdminClient(globals, (client) =>
        client<{ requeued: number }>({
          method: 'POST',
          path: '/v1/operator/webhooks/retry',
          body: { webhook_id: webhookId ?? null },
        }),
      );
      output(globals.json, result, (value) =>
        process.stdout.write(
          `${value.requeued} failed deliver${value.requeued === 1 ? 'y' : 'ies'} queued again\n`,
        ),
      );
    });

  return webhooks;
}
