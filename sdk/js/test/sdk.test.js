// The SDK under Node: what a pack's own tests rely on (node --test).
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { defineCheck, defineTool, declareEnv, inPackd, testContext, toJSONSchema } from "../index.js";

test("outside packd, defineTool builds the tool and its JSON Schemas", async () => {
  assert.equal(inPackd, false);
  const r = defineTool({
    id: "acme.greet",
    version: "1.2.3",
    description: "Greets.",
    input: z.strictObject({ name: z.string().min(1), loud: z.boolean().default(false) }),
    output: z.object({ greeting: z.string() }),
    handler: async ({ name, loud }, ctx) => ({ greeting: `${loud ? "HELLO" : "Hello"} ${name} from ${ctx.tenantId}` }),
  });
  assert.equal(r.kind, "ok");
  const tool = r.value;
  assert.deepEqual(tool.input, {
    type: "object",
    properties: { name: { type: "string", minLength: 1 }, loud: { type: "boolean", default: false } },
    required: ["name"],
    additionalProperties: false,
  });
  assert.deepEqual(tool.output.required, ["greeting"]);
  assert.ok(tool.inputZod);
  assert.deepEqual(await tool.handler({ name: "Ada", loud: true }, testContext()), { greeting: "HELLO Ada from t-test" });
});

test("a bad definition is an err result, not a throw", () => {
  const noVersion = defineTool({ id: "acme.x", handler: () => ({}) });
  assert.equal(noVersion.kind, "err");
  assert.equal(noVersion.error.code, "invalid-tool-definition");
  assert.match(noVersion.error.message, /exact semver/);
  assert.equal(defineTool({ id: "acme.x", version: "1.0.0" }).error.message, 'tool "acme.x" has no handler function (nor a declarative spec)');
  assert.equal(defineTool({ id: "acme.x", version: "1.0.0", input: "nope", handler: () => 1 }).error.code, "invalid-schema");
});

test("JSON Schema is kept as written", () => {
  const schema = { type: "object", properties: { a: { type: "integer" } } };
  assert.equal(toJSONSchema(schema), schema);
  assert.throws(() => toJSONSchema([1]), /JSON Schema object or a zod schema/);
});

test("defineCheck fills in its config's defaults, JSON Schema or zod", async () => {
  const json = defineCheck({
    id: "acme.min-length",
    configSchema: { type: "object", properties: { minLength: { type: "integer", default: 3 } } },
    evaluate: (config, trace) => ({ passed: String(trace.output).length >= config.minLength, min: config.minLength }),
  });
  assert.deepEqual(await json.evaluate({}, { output: "abcd" }), { passed: true, min: 3 });
  assert.deepEqual(await json.evaluate({ minLength: 9 }, { output: "abcd" }), { passed: false, min: 9 });
  assert.deepEqual(json.configSchema.properties.minLength, { type: "integer", default: 3 });

  const zod = defineCheck({
    id: "acme.words",
    config: z.object({ words: z.number().int().default(2) }),
    evaluate: (config, trace) => ({ passed: trace.output.split(" ").length >= config.words }),
  });
  assert.deepEqual(await zod.evaluate(undefined, { output: "a b" }), { passed: true });
  assert.throws(() => defineCheck({ id: "acme.none" }), /no evaluate function/);
});

test("testContext gives the ids, a signal that never fires and a logger", () => {
  const ctx = testContext({ tenantId: "t1", secrets: { k: "v" } });
  assert.equal(ctx.tenantId, "t1");
  assert.equal(ctx.runId, "run-test");
  assert.equal(ctx.abortSignal.aborted, false);
  assert.equal(typeof ctx.log.info, "function");
  // Neither is a member a handler that answers its ctx would send back.
  assert.deepEqual(JSON.parse(JSON.stringify(ctx)), { tenantId: "t1", runId: "run-test", secrets: { k: "v" } });
  declareEnv({ required: ["X"] }); // outside packd it does nothing
});
