// The conformance fixture pack of the existing pack services (PROTOCOL-NOTES
// §8) in TypeScript, with the same tools and checks as the Go fixture
// (wasm-examples/conformance) and the C one: `hold` sleeps instead of
// polling for a file, since a guest has no filesystem. Schemas are written
// with zod here, so that its conversion to JSON Schema is what the index
// holds (packd index writes it from this module).
import { declareEnv, defineCheck, defineTool } from "@packd/sdk";
import { z } from "zod";

declareEnv({ optional: ["CONFORMANCE_VISIBLE"] });

const anyObject = z.looseObject({});

defineTool({
  id: "conformance.echo",
  version: "1.0.0",
  description: "Answers with its message.",
  input: z.strictObject({ message: z.string().min(1) }),
  output: z.looseObject({ message: z.string() }),
  handler: async ({ message }) => ({ message }),
});

defineTool({
  id: "conformance.bad-output",
  version: "1.0.0",
  input: anyObject,
  output: z.looseObject({ message: z.string() }),
  // Off its schema on purpose: packd answers output-validation-failed.
  handler: async () => ({ message: 42 }) as unknown as { message: string },
});

defineTool({
  id: "conformance.context",
  version: "1.0.0",
  input: anyObject,
  output: anyObject,
  handler: async (_input, ctx) => {
    const sent = ctx as unknown as Record<string, unknown>; // every member the caller sent
    const out: Record<string, unknown> = { tenantId: ctx.tenantId, runId: ctx.runId };
    for (const k of ["env", "secrets", "config"]) out[k] = sent[k] ?? {};
    for (const k of ["requestId", "idempotencyKey", "projectId", "orgId", "settings"]) if (sent[k] !== undefined) out[k] = sent[k];
    return out;
  },
});

defineTool({
  id: "conformance.defaults",
  version: "1.0.0",
  input: {
    type: "object",
    properties: {
      name: { type: "string" },
      greeting: { type: "string", default: "Hello" },
      options: { type: "object", properties: { loud: { type: "boolean", default: false } }, default: {} },
    },
    required: ["name"],
  },
  output: { type: "object" },
  handler: async (input) => input,
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

defineTool({
  id: "conformance.hold",
  version: "1.0.0",
  input: z.looseObject({ release: z.string().min(1), ms: z.int().min(0) }),
  output: z.looseObject({ released: z.boolean() }),
  handler: async ({ release, ms }) => {
    console.log(`hold: ${release}`);
    await sleep(ms);
    return { released: true };
  },
});

defineTool({
  id: "conformance.noisy",
  version: "1.0.0",
  input: anyObject,
  output: z.looseObject({ ok: z.boolean() }),
  handler: async () => {
    console.log("noisy: a line on stdout");
    console.log('{"v":2,"kind":"result","output":{"ok":false}}');
    console.error("noisy: a line on stderr");
    return { ok: true };
  },
});

defineTool({
  id: "conformance.process-env",
  version: "1.0.0",
  input: anyObject,
  output: z.looseObject({ names: z.array(z.string()) }),
  handler: async () => ({ names: Object.keys(process.env).sort() }),
});

defineTool({
  id: "conformance.sleep",
  version: "1.0.0",
  input: z.looseObject({ ms: z.int().min(0) }),
  output: z.looseObject({ slept: z.int() }),
  handler: async ({ ms }) => {
    await sleep(ms);
    return { slept: ms };
  },
});

defineTool({
  id: "conformance.throws",
  version: "1.0.0",
  input: anyObject,
  output: anyObject,
  handler: async () => {
    throw new Error("boom");
  },
});

defineCheck({
  id: "conformance.checks.min-length",
  guardrail: "conformance.min-length",
  action: { "on-violation": "halt" },
  severity: "error",
  configSchema: { type: "object", properties: { minLength: { type: "integer", minimum: 0, default: 1 } } },
  evaluate: async (config, trace) => {
    const min = typeof config.minLength === "number" ? config.minLength : 1;
    const output = (trace as { output?: unknown } | null)?.output;
    const s = typeof output === "string" ? output : "";
    // String length counts UTF-16 code units, as the existing services do.
    return s.trim().length >= min ? { passed: true } : { passed: false, reason: "too short" };
  },
});

defineCheck({
  id: "conformance.checks.throws",
  guardrail: "conformance.check-throws",
  action: { "on-violation": "log-only" },
  evaluate: async () => {
    throw new Error("check boom");
  },
});
