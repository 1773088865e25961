// @packd/sdk/define under Node: kindgi's authoring surface and invokeTool.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { z } from "zod";
import { defineCheck, defineGuardrail, defineTool, invokeTool, toolContextForTest } from "@packd/sdk/define";

const ok = (r) => {
  assert.equal(r.kind, "ok", r.kind === "err" ? r.error.message : "");
  return r.value;
};

test("a tool keeps kindgi's manifest fields, with needsSpec schemas in JSON Schema", () => {
  const tool = ok(
    defineTool({
      id: "acme.lookup",
      version: "1.0.0",
      input: z.object({ id: z.string() }),
      output: z.object({ found: z.boolean() }),
      effects: [{ kind: "reads", resource: "db:orders" }],
      mutating: false,
      needs: [{ name: "tenant" }],
      needsSpec: { env: { REGION: z.enum(["eu", "us"]).default("eu") }, secrets: { API_KEY: { type: "string", minLength: 8 } } },
      sandbox: "strict",
      handler: async () => ({ found: true }),
    }),
  );
  assert.deepEqual(tool.effects, [{ kind: "reads", resource: "db:orders" }]);
  assert.equal(tool.mutating, false);
  assert.deepEqual(tool.needs, [{ name: "tenant" }]);
  assert.deepEqual(tool.needsSpec.env.REGION, { type: "string", enum: ["eu", "us"], default: "eu" });
  assert.deepEqual(tool.needsSpec.secrets.API_KEY, { type: "string", minLength: 8 });
  assert.equal(tool.sandbox, "strict");
});

test("an effect kindgi does not know, a non-boolean mutating, and handler with spec are refused", () => {
  const base = { id: "acme.x", version: "1.0.0", handler: async () => ({}) };
  assert.equal(defineTool({ ...base, effects: [{ kind: "teleports" }] }).error.code, "unknown-effect");
  assert.match(defineTool({ ...base, mutating: "no" }).error.message, /mutating is true or false/);
  const both = defineTool({ ...base, spec: { kind: "http", method: "GET", urlTemplate: "https://api.example.com/" } });
  assert.match(both.error.message, /exclusive/);
});

test("a declarative http tool allows its host and binds its authorization, which the pack never holds", () => {
  const tool = ok(
    defineTool({
      id: "acme.issue",
      version: "1.0.0",
      input: { type: "object", properties: { repo: { type: "string" } }, required: ["repo"] },
      output: {},
      spec: {
        kind: "http",
        method: "GET",
        urlTemplate: "https://api.example.com:8443/repos/{repo}",
        authorization: { kind: "bearer", secretRef: { envName: "prod", name: "GH_TOKEN" } },
      },
    }),
  );
  assert.deepEqual(tool.network, {
    kind: "allowlist",
    hosts: ["api.example.com"],
    credentials: { "api.example.com": { secret: "GH_TOKEN", header: "Authorization", scheme: "Bearer" } },
  });
  const hostFromInput = defineTool({ id: "acme.y", version: "1.0.0", spec: { kind: "http", method: "GET", urlTemplate: "https://{host}/x" } });
  assert.match(hostFromInput.error.message, /no \{placeholder\}/);
  const none = defineTool({ id: "acme.z", version: "1.0.0", network: { kind: "none" }, spec: { kind: "http", method: "GET", urlTemplate: "https://a.example/" } });
  assert.match(none.error.message, /could never go out/);
});

test("a declarative http tool makes the request its spec says", async (t) => {
  const seen = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      seen.push({ method: req.method, url: req.url, body, type: req.headers["content-type"], trace: req.headers["x-trace"] });
      res.setHeader("content-type", "application/json");
      res.end(req.url.includes("missing") ? "" : JSON.stringify({ number: 7 }));
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  const tool = ok(
    defineTool({
      id: "acme.create",
      version: "1.0.0",
      input: { type: "object", properties: { repo: { type: "string" }, title: { type: "string" } }, required: ["repo", "title"] },
      output: { type: "object", properties: { number: { type: "integer" } }, required: ["number"] },
      network: { kind: "allowlist", hosts: [] },
      spec: {
        kind: "http",
        method: "POST",
        urlTemplate: `http://127.0.0.1:${server.address().port}/repos/{repo}/issues`,
        headers: [{ name: "X-Trace", value: "t-{repo}" }],
      },
    }),
  );
  assert.deepEqual(tool.network.hosts, ["127.0.0.1"]);
  const r = await invokeTool(tool, { repo: "a b", title: "Hi" }, toolContextForTest());
  assert.deepEqual(r, { kind: "ok", value: { number: 7 } });
  assert.deepEqual(seen[0], { method: "POST", url: "/repos/a%20b/issues", body: '{"title":"Hi"}', type: "application/json", trace: "t-a b" });
});

test("invokeTool: validation in (Ajv's words, defaults), the handler, validation out, kindgi's codes", async () => {
  const tool = ok(
    defineTool({
      id: "acme.add",
      version: "1.0.0",
      input: { type: "object", properties: { a: { type: "integer" }, b: { type: "integer", default: 1 } }, required: ["a"], additionalProperties: false },
      output: { type: "object", properties: { sum: { type: "integer" } }, required: ["sum"] },
      handler: async ({ a, b }) => (a === 13 ? { sum: "thirteen" } : a < 0 ? Promise.reject(new Error("negative")) : { sum: a + b }),
    }),
  );
  const ctx = toolContextForTest();
  assert.deepEqual(await invokeTool(tool, { a: 2 }, ctx), { kind: "ok", value: { sum: 3 } });
  const bad = await invokeTool(tool, { a: "2", c: 1 }, ctx);
  assert.equal(bad.error.code, "input-validation-failed");
  assert.equal(bad.error.message, 'Input for tool "acme.add" failed validation');
  assert.deepEqual(
    bad.error.errors.map((e) => `${e.instancePath} ${e.message}`),
    [" must NOT have additional properties", "/a must be integer"],
  );
  const threw = await invokeTool(tool, { a: -1 }, ctx);
  assert.equal(threw.error.code, "handler-error");
  assert.equal(threw.error.message, 'Tool "acme.add" handler threw: negative');
  const out = await invokeTool(tool, { a: 13 }, ctx);
  assert.equal(out.error.code, "output-validation-failed");
  assert.equal(out.error.errors[0].message, "must be integer");
  assert.equal((await invokeTool(tool, { a: 13 }, ctx, { skipOutputValidation: true })).kind, "ok");
});

test("invokeTool: a zod tool gets zod's output; the declared env only, with defaults; a missing one is not run", async () => {
  const tool = ok(
    defineTool({
      id: "acme.greet",
      version: "1.0.0",
      input: z.object({ name: z.string().transform((s) => s.toUpperCase()) }),
      output: z.object({ text: z.string() }),
      needsSpec: { env: { GREETING: z.string().default("Hello"), SHOP: z.string().url() } },
      handler: async ({ name }, ctx) => ({ text: `${ctx.env.GREETING} ${name} at ${ctx.env.SHOP} (${Object.keys(ctx.env).length})` }),
    }),
  );
  const r = await invokeTool(tool, { name: "ada" }, toolContextForTest({ env: { SHOP: "https://shop.example", OTHER: "x" } }));
  assert.deepEqual(r, { kind: "ok", value: { text: "Hello ADA at https://shop.example (2)" } });
  const missing = await invokeTool(tool, { name: "ada" }, toolContextForTest());
  assert.equal(missing.error.code, "precondition-failed");
  assert.equal(missing.error.reason, "env-value-missing");
  const invalid = await invokeTool(tool, { name: "ada" }, toolContextForTest({ env: { SHOP: "not a url" } }));
  assert.equal(invalid.error.reason, "env-value-invalid");
});

test("a check says its config's problems, its JSON Schema, and resolves defaults", async () => {
  const check = defineCheck({
    id: "acme.min-length",
    kind: "zero-llm",
    configSchema: { type: "object", properties: { min: { type: "integer", minimum: 0, default: 2 } }, additionalProperties: false },
    validateConfig: (c) => (c.min === 7 ? "seven is unlucky" : undefined),
    evaluate: async (config, trace) => ({ passed: (trace.output || "").length >= config.min }),
  });
  assert.deepEqual(check.configJsonSchema.properties.min, { type: "integer", minimum: 0, default: 2 });
  assert.equal(check.configZod, undefined);
  assert.equal(check.validateConfig({ min: -1 }), "/min must be >= 0");
  assert.equal(check.validateConfig({ min: 7 }), "seven is unlucky");
  assert.equal(check.validateConfig({ min: 3 }), undefined);
  assert.deepEqual(await check.evaluate({}, { output: "a" }), { passed: false });
  const zodCheck = defineCheck({ id: "acme.z", kind: "zero-llm", configSchema: z.object({ n: z.number().max(3) }), evaluate: async () => ({ passed: true }) });
  assert.equal(zodCheck.validateConfig({ n: 9 }), "/n Too big: expected number to be <=3");
  assert.ok(zodCheck.configZod);
});

test("a guardrail object needs a check and an action object", () => {
  const g = { id: "acme.g", kind: "zero-llm", check: "acme.min-length", action: { "on-violation": "halt" } };
  assert.equal(defineGuardrail(g), g);
  assert.throws(() => defineGuardrail({ ...g, check: undefined }), /names no check/);
  assert.throws(() => defineGuardrail({ ...g, action: "halt" }), /action is an object/);
});
