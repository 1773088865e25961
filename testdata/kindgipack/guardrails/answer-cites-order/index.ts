import { defineCheck } from '@kindgi/sdk/define';
import { z } from 'zod';

export const check = defineCheck({
  id: 'acme-desk.cites-order',
  kind: 'zero-llm',
  configSchema: z.object({ minOrders: z.number().int().min(0).default(1) }),
  evaluate: async (config, trace) => {
    const cited = (trace.output ?? '').match(/ord_\d+/g) ?? [];
    return cited.length >= config.minOrders
      ? { passed: true }
      : { passed: false, reason: `the answer cites ${cited.length} order(s), under ${config.minOrders}` };
  },
});

export default {
  id: 'acme-desk.answer-cites-order',
  name: 'Answers cite an order',
  kind: 'zero-llm',
  check: 'acme-desk.cites-order',
  config: { minOrders: 1 },
  action: { 'on-violation': 'retry', retry: { maxAttempts: 2 } },
  severity: 'warn',
  scope: { when: 'always' },
};
