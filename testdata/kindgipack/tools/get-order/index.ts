import { defineTool } from '@kindgi/sdk/define';
import type { ToolId } from '@kindgi/sdk/types';
import { z } from 'zod';

import { findOrder } from '../../src/orders.js';

const defined = defineTool({
  id: 'acme-desk.get-order' as ToolId,
  description: 'Reads an order by its id (ord_1234), with its total in the region\'s currency.',
  version: '0.1.0',
  input: z.object({ orderId: z.string().regex(/^ord_\d+$/) }),
  output: z.object({
    found: z.boolean(),
    customer: z.string().optional(),
    total: z.string().optional(),
  }),
  effects: [{ kind: 'reads', resource: 'db:orders' }],
  mutating: false,
  needsSpec: { env: { CURRENCY: z.enum(['EUR', 'USD']).default('EUR') } },
  handler: async ({ orderId }, ctx) => {
    const order = findOrder(orderId);
    if (!order) return { found: false };
    const currency = ctx.env?.['CURRENCY'] ?? 'EUR';
    return { found: true, customer: order.customer, total: `${(order.totalCents / 100).toFixed(2)} ${currency}` };
  },
});

if (defined.kind === 'err') throw new Error(`acme-desk.get-order failed to compile: ${defined.error.message}`);
export default defined.value;
