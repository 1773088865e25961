import type { RunTrace } from '@kindgi/sdk/define';
import { describe, expect, test } from 'vitest';

import guardrail, { check } from '../guardrails/answer-cites-order/index.js';

const answered = (output: string): RunTrace => ({
  runId: 'run-test',
  tenantId: 'tenant-test',
  output,
  toolCalls: [],
  toolResults: [],
  modelCalls: [],
  mode: 'ci',
});

describe('acme-desk.answer-cites-order', () => {
  test('passes an answer that cites an order', async () => {
    expect(await check.evaluate(guardrail.config, answered('Refunded ord_1001.'), {})).toEqual({ passed: true });
  });

  test('fails one that cites none, saying why', async () => {
    expect(await check.evaluate({}, answered('Refunded.'), {})).toEqual({
      passed: false,
      reason: 'the answer cites 0 order(s), under 1',
    });
  });

  test("refuses a config its schema doesn't fit", () => {
    expect(check.validateConfig?.({ minOrders: -1 })).toBe('/minOrders Too small: expected number to be >=0');
    expect(check.configJsonSchema).toMatchObject({ properties: { minOrders: { type: 'integer', minimum: 0, default: 1 } } });
  });

  test('binds its check with an action', () => {
    expect(guardrail).toMatchObject({ check: check.id, action: { 'on-violation': 'retry' } });
  });
});
