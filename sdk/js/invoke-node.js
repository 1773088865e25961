// invokeTool, for a pack's own tests under Node (node --test, vitest):
// a tool called as kindgi's runtime and packd call it, with kindgi's
// semantics. The declared env is resolved (needs.js), a copy of the input
// is validated against the tool's input schema with its defaults filled
// in (and parsed by its zod schema), the handler runs, and its answer is
// validated against the output schema. Validation is Ajv's (draft
// 2020-12, formats), so the issues read as kindgi's do. Under packd
// (package.json's "#invoke" without the node condition) invoke.js stands
// in: packd validates every call itself.
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { ToolPreconditionError, envForCall } from "./needs.js";

const compiled = { input: new WeakMap(), output: new WeakMap(), plain: new WeakMap() };
const ajvs = {};
const ajvFor = (side) =>
  (ajvs[side] ??= addFormats(new Ajv2020({ allErrors: true, strict: false, allowUnionTypes: true, useDefaults: side !== "output" })));

/** The compiled validator of schema: on the input side it fills in defaults. */
export function validatorFor(schema, side = "plain") {
  const cache = compiled[side];
  let v = cache.get(schema);
  if (!v) {
    v = ajvFor(side).compile(schema);
    cache.set(schema, v);
  }
  return v;
}

/** The first issue of value against schema as one line, or undefined. */
export function firstIssue(schema, value, side = "plain") {
  const v = validatorFor(schema, side);
  if (v(value)) return undefined;
  const e = (v.errors || [])[0] || {};
  return `${e.instancePath || ""} ${e.message || "invalid"}`.trim();
}

const notRun = (tool, e) => ({
  kind: "err",
  error: { code: "precondition-failed", message: `Tool "${tool.id}" was not run: ${e.reason}: ${e.message}`, toolId: tool.id, reason: e.reason, cause: e },
});

/**
 * invokeTool(tool, input, ctx, { skipOutputValidation }) runs tool the
 * way its runtime does and answers `{ kind: "ok", value }` or
 * `{ kind: "err", error }` with the error's code:
 * `precondition-failed`, `input-validation-failed` (error.errors: Ajv's
 * issues), `handler-error` (a throw; error.cause), or
 * `output-validation-failed`. It never throws.
 */
export async function invokeTool(tool, input, ctx, options = {}) {
  if (ctx === undefined || ctx === null) throw new TypeError("invokeTool(tool, input, ctx): pass a context (toolContextForTest())");
  let env;
  try {
    env = envForCall(tool.needsSpec, ctx.env, (schema, v) => firstIssue(schema, v));
  } catch (e) {
    if (e instanceof ToolPreconditionError) return notRun(tool, e);
    throw e;
  }
  const candidate = structuredClone(input);
  const inSchema = tool.input ?? {};
  const check = validatorFor(inSchema, "input");
  const inputError = (errors) => ({
    kind: "err",
    error: { code: "input-validation-failed", message: `Input for tool "${tool.id}" failed validation`, toolId: tool.id, errors },
  });
  if (!check(candidate)) return inputError(check.errors || []);
  let prepared = candidate;
  if (tool.inputZod) {
    const r = await tool.inputZod.safeParseAsync(candidate);
    if (!r.success)
      return inputError(r.error.issues.map((i) => ({ instancePath: (i.path || []).map((p) => `/${String(p)}`).join(""), message: i.message })));
    prepared = r.data;
  }
  const called = env === undefined ? ctx : { ...ctx, env };
  let output;
  try {
    output = await tool.handler(prepared, called);
  } catch (cause) {
    if (cause instanceof ToolPreconditionError) return notRun(tool, cause);
    const message = `Tool "${tool.id}" handler threw: ${cause instanceof Error ? cause.message : String(cause)}`;
    return { kind: "err", error: { code: "handler-error", message, toolId: tool.id, cause } };
  }
  if (!options.skipOutputValidation) {
    const out = validatorFor(tool.output ?? {}, "output");
    if (!out(output))
      return {
        kind: "err",
        error: {
          code: "output-validation-failed",
          message: `Tool "${tool.id}" handler produced output that failed validation`,
          toolId: tool.id,
          errors: out.errors || [],
        },
      };
  }
  return { kind: "ok", value: output };
}
