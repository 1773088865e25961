// jsnet: a test pack in TypeScript that reaches the network with fetch()
// through packd's egress. net.fetch (a zod input schema) sends the request
// its input describes, with the call's secret apiToken as a bearer token,
// and answers {status, body, seen} (seen: the response's X-Seen header)
// or, when packd refused or failed it, {reason, message}, with "nonce":
// 8 random bytes in hex (crypto.getRandomValues) when asked; net.throws
// throws.
import { defineTool } from "@packd/sdk";
import { z } from "zod";

defineTool({
  id: "net.fetch",
  version: "1.0.0",
  description: "Fetches a URL.",
  input: z.strictObject({ url: z.string().min(1), method: z.enum(["GET", "POST"]).default("GET"), body: z.string().optional(), nonce: z.boolean().optional() }),
  output: z.looseObject({}),
  network: { kind: "allowlist", hosts: ["127.0.0.1"] },
  handler: async ({ url, method, body, nonce }, ctx) => {
    const extra = nonce ? { nonce: Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0")).join("") } : {};
    const headers: Record<string, string> = {};
    if (ctx.secrets?.apiToken) headers.Authorization = `Bearer ${ctx.secrets.apiToken}`;
    try {
      const res = await fetch(url, { method, body, headers });
      const text = await res.text();
      return { ...extra, status: res.status, body: text, ...(res.headers.has("x-seen") && { seen: res.headers.get("x-seen") }) };
    } catch (e) {
      const cause = (e as { cause?: { reason?: string; message?: string } }).cause;
      if (!cause) throw e;
      return { ...extra, reason: cause.reason, message: cause.message };
    }
  },
});

class LedgerError extends Error {
  name = "LedgerError";
}

defineTool({
  id: "net.throws",
  version: "1.0.0",
  input: z.looseObject({}),
  output: z.looseObject({}),
  handler: async () => {
    await Promise.resolve();
    throw new LedgerError("the ledger is closed");
  },
});
