// The official TypeScript SDK's MCP client (@modelcontextprotocol/sdk,
// pinned in package-lock.json; it speaks MCP 2025-11-25) against packd,
// for cmd/packd's mcp_test.go: over Streamable HTTP
//
//   node client.mjs http URL TOKEN
//
// or over stdio, starting packd mcp itself
//
//   node client.mjs stdio PACKD --index INDEX [packd mcp flags...]
//
// or, against an egress test pack over HTTP, one net.fetch of URL with a
// bound credential (SECRET as ctx.secrets.apiToken):
//
//   node client.mjs net MCPURL TOKEN URL SECRET
//
// It lists the tools of a conformance fixture pack and calls them: echo,
// a bad input, a throw, a call past its deadline, a call it aborts, and
// conformance.noisy (internal in the test's index); it prints what each
// answered as one JSON object on stdout. Over stdio it also reports
// whether packd's stderr said the aborted call was cancelled.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [mode, ...rest] = process.argv.slice(2);
let transport;
let stderrText = '';
if (mode === 'http' || mode === 'net') {
  const [url, token] = rest;
  transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
} else if (mode === 'stdio') {
  const [command, ...args] = rest;
  transport = new StdioClientTransport({ command, args: ['mcp', ...args], stderr: 'pipe', env: { PATH: process.env.PATH ?? '' } });
  transport.stderr.on('data', (chunk) => { stderrText += chunk.toString(); });
} else {
  console.error('usage: node client.mjs http URL TOKEN | stdio PACKD ARGS...');
  process.exit(2);
}

const client = new Client({ name: 'packd-test', version: '1.0.0' });
await client.connect(transport);
const out = { protocol: client.getServerVersion()?.name, tools: [] };

const text = (r) => (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
const call = async (name, args, meta, options) => {
  try {
    const r = await client.callTool({ name, arguments: args, _meta: meta }, undefined, options);
    return { isError: r.isError === true, text: text(r), structured: r.structuredContent ?? null };
  } catch (e) {
    return { error: String(e?.message ?? e) };
  }
};

if (mode === 'net') {
  const [, , fetchURL, secret] = rest;
  const r = await call('net.fetch', { url: fetchURL }, { 'kindgi.com/ctx': { tenantId: 't-ts', runId: 'run-ts', secrets: { apiToken: secret } } });
  await client.close();
  process.stdout.write(JSON.stringify({ fetch: r }) + '\n');
  process.exit(0);
}

const list = await client.listTools();
out.tools = list.tools.map((t) => t.name);
out.echo = await call('conformance.echo', { message: 'hello from TypeScript' });
out.badInput = await call('conformance.echo', { message: 7 });
out.throws = await call('conformance.throws', {});
out.deadline = await call('conformance.sleep', { ms: 20000 }, { 'kindgi.com/timeoutMs': 300 });
out.internal = await call('conformance.noisy', {});

const abort = new AbortController();
const begun = Date.now();
setTimeout(() => abort.abort('the test aborts it'), 300);
out.aborted = await call('conformance.sleep', { ms: 20000 }, undefined, { signal: abort.signal });
out.abortedAfterMs = Date.now() - begun;
// The server ends the call it was told of: a call after it finds its slot.
out.after = await call('conformance.echo', { message: 'after' });
if (mode === 'stdio') {
  for (let i = 0; i < 200 && !/"outcome":"cancelled"/.test(stderrText); i++) {
    await new Promise((r) => setTimeout(r, 25));
  }
  out.serverSawCancelled = /"outcome":"cancelled"/.test(stderrText);
}
await client.close();
process.stdout.write(JSON.stringify(out) + '\n');
