import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import { invokeTool, toolContextForTest } from '@kindgi/sdk/define';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

import createIssue from '../tools/create-issue/index.js';
import encode from '../tools/encode/index.js';
import getOrder from '../tools/get-order/index.js';

describe('acme-desk.get-order', () => {
  test('reads an order, in the declared currency (EUR by default)', async () => {
    expect(await invokeTool(getOrder, { orderId: 'ord_1001' }, toolContextForTest())).toEqual({
      kind: 'ok',
      value: { found: true, customer: 'Ada', total: '42.00 EUR' },
    });
    const usd = await invokeTool(getOrder, { orderId: 'ord_1002' }, toolContextForTest({ env: { CURRENCY: 'USD' } }));
    expect(usd).toEqual({ kind: 'ok', value: { found: true, customer: 'Grace', total: '9.90 USD' } });
  });

  test('an unknown order is not found', async () => {
    expect(await invokeTool(getOrder, { orderId: 'ord_9' }, toolContextForTest())).toEqual({ kind: 'ok', value: { found: false } });
  });

  test('a malformed id never reaches the handler', async () => {
    const r = await invokeTool(getOrder, { orderId: 'ORDER-1' }, toolContextForTest());
    expect(r.kind).toBe('err');
    if (r.kind === 'err') expect(r.error.code).toBe('input-validation-failed');
  });

  test('a currency the schema refuses is a precondition', async () => {
    const r = await invokeTool(getOrder, { orderId: 'ord_1001' }, toolContextForTest({ env: { CURRENCY: 'GBP' } }));
    expect(r.kind === 'err' && r.error.code).toBe('precondition-failed');
  });

  test('says it only reads', () => {
    expect(getOrder.mutating).toBe(false);
    expect(getOrder.effects).toEqual([{ kind: 'reads', resource: 'db:orders' }]);
  });
});

describe('acme-desk.encode', () => {
  test('encodes UTF-8 with Buffer', async () => {
    expect(await invokeTool(encode, { note: 'héllo' }, toolContextForTest())).toEqual({
      kind: 'ok',
      value: { base64: 'aMOpbGxv', hex: '68c3a96c6c6f', bytes: 6, roundTrip: true },
    });
  });
});

describe('acme-desk.create-issue', () => {
  const seen: { url: string; auth: string; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ url: req.url ?? '', auth: req.headers.authorization ?? '', body });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ number: 12, title: JSON.parse(body).title }));
    });
  });
  beforeAll(() => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve)));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('files the issue with the tenant token', async () => {
    const port = (server.address() as AddressInfo).port;
    const r = await invokeTool(createIssue, { port, project: 'desk', title: 'Refund' }, toolContextForTest({ secrets: { ISSUES_TOKEN: 'tok-1' } }));
    expect(r).toEqual({ kind: 'ok', value: { number: 12, title: 'Refund' } });
    expect(seen).toEqual([{ url: '/projects/desk/issues', auth: 'Bearer tok-1', body: '{"title":"Refund"}' }]);
  });

  test('an empty title never reaches the tracker', async () => {
    const r = await invokeTool(createIssue, { port: 1, project: 'desk', title: '' }, toolContextForTest());
    expect(r.kind === 'err' && r.error.code).toBe('input-validation-failed');
  });
});
