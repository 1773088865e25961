// @packd/sdk: tools and guardrail checks for packd, in TypeScript or
// JavaScript. Under packd (the module `packd build-js` makes, QuickJS in
// WebAssembly) each definition registers with the runtime, which
// describes it to `packd index` and calls it; under Node (a pack's own
// tests) defineTool and defineCheck only build the definition, so a test
// calls `tool.handler(input, testContext())` directly.
//
// Schemas are JSON Schema (draft 2020-12) objects or zod (4.2 or later)
// schemas, converted with the schema's own toJSONSchema. packd validates
// a tool's input and output against the JSON Schema in the index, which
// `packd index` writes from what this SDK describes.

import { httpHandler, httpNetwork } from "./http.js";
import { envForCall } from "./needs.js";
import { firstIssue } from "#invoke";

export { invokeTool } from "#invoke";
export { ToolPreconditionError } from "./needs.js";

const runtime = globalThis[Symbol.for("packd")];

const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;
const ID = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

/** Whether schema is a zod schema (any zod 4 schema has `_zod`). */
export function isZodSchema(schema) {
  return schema !== null && typeof schema === "object" && "_zod" in schema;
}

/**
 * The JSON Schema of schema: itself when it is one, converted when it is
 * zod (io "input" for a tool's input and a check's config: a field with a
 * default is optional to the caller; "output" for a tool's output).
 */
export function toJSONSchema(schema, io = "input") {
  if (schema === undefined) return undefined;
  if (isZodSchema(schema)) {
    if (typeof schema.toJSONSchema !== "function")
      throw new Error("this zod schema has no toJSONSchema method: @packd/sdk needs zod 4.2 or later");
    const json = schema.toJSONSchema({ io });
    delete json.$schema;
    return json;
  }
  if (schema === null || typeof schema !== "object" || Array.isArray(schema))
    throw new Error("a schema is a JSON Schema object or a zod schema");
  return schema;
}

const fail = (code, message) => ({ kind: "err", error: { code, message } });

// registered reports a definition that failed under packd at once: the
// module then fails to load, saying why, instead of serving without it.
const registered = (result) => {
  if (runtime && result.kind === "err") throw new Error(result.error.message);
  return result;
};

// A context's abort signal: packd stops a call itself, so it never fires.
// One serves every call (under packd it is part of the snapshot).
let quiet;
const neverAborts = () => (quiet ??= new AbortController().signal);

/** A logger writing one line per record on the guest's stdout or stderr. */
const callLogger = (ctx) => {
  const line = (write, level) => (message, fields) => {
    const ids = { tenantId: ctx.tenantId, runId: ctx.runId };
    write(JSON.stringify({ level, message: String(message), ...ids, ...(fields || {}) }));
  };
  return {
    debug: line(console.log, "debug"),
    info: line(console.log, "info"),
    warn: line(console.error, "warn"),
    error: line(console.error, "error"),
  };
};

// What a context has beyond the members the caller sent: an abortSignal
// and a log (made when first read), on its prototype, so that they cost a
// call nothing until read and are never part of the context as JSON.
const contextExtras = Object.create(Object.prototype, {
  abortSignal: { get: neverAborts, configurable: true },
  log: {
    configurable: true,
    get() {
      const log = callLogger(this);
      Object.defineProperty(this, "log", { value: log, configurable: true, enumerable: false, writable: true });
      return log;
    },
  },
});

/** The context a handler gets from the call's ctx. */
const toolContext = (ctx) => {
  const c = ctx !== null && typeof ctx === "object" && !Array.isArray(ctx) ? ctx : {};
  Object.setPrototypeOf(c, contextExtras);
  return c;
};

/**
 * A context for a pack's own tests: the protocol's callContext with the
 * ids filled in.
 */
export function testContext(overrides = {}) {
  return toolContext({ tenantId: "t-test", runId: "run-test", ...overrides });
}

/**
 * kindgi's context for a unit test: tenant `tenant-test`, run `run-test`,
 * and what you pass over them (`env`, `secrets`, …).
 */
export function toolContextForTest(overrides = {}) {
  return toolContext({ tenantId: "tenant-test", runId: "run-test", ...overrides });
}

/** parse runs a zod schema over a value the host already validated, so
 * the handler gets zod's output (transforms and defaults applied). */
const parseWith = (schema, value) => {
  // jitless: zod's compiled parsers (new Function) would be compiled again
  // by every call, which starts from the snapshot.
  const r = schema.safeParse(value, { jitless: true });
  if (r.success) return r.data;
  throw r.error;
};

// sample is a value of the shape a JSON Schema describes (each required
// member, the first of a choice), valid or not: what warm parses.
const sample = (schema, depth = 0) => {
  if (schema === null || typeof schema !== "object" || depth > 8) return undefined;
  if ("default" in schema) return schema.default;
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  for (const k of ["anyOf", "oneOf", "allOf"]) if (Array.isArray(schema[k])) return sample(schema[k][0], depth + 1);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "object": {
      const out = {};
      for (const [k, sub] of Object.entries(schema.properties || {})) out[k] = sample(sub, depth + 1);
      return out;
    }
    case "array":
      return schema.items ? [sample(schema.items, depth + 1)] : [];
    case "string":
      return "";
    case "number":
    case "integer":
      return 0;
    case "boolean":
      return false;
    case "null":
      return null;
  }
  return undefined;
};

// warm parses a sample once when the pack loads, under packd: zod builds
// what it keeps of a schema (its normalized shape, its checks) on the
// first parse, and a call that started from a snapshot taken before that
// would build it again, every call (1.4M fuel for a one-field object; 0.3M
// after).
const warm = (schema, json) => {
  try {
    schema.safeParse(sample(json), { jitless: true });
  } catch {
    // a sample a refinement throws on: the schema is still warm
  }
};

/** The effect kinds a tool may declare (kindgi's EFFECT_KINDS). */
export const EFFECT_KINDS = Object.freeze(["reads", "writes", "deletes", "network", "spawns-run", "emits-event", "external-side-effect", "sensitive-data-egress"]);

// The manifest's data fields besides the schemas, as `packd index` writes
// them (docs/index-format.md, "Tools").
const TOOL_DATA = ["description", "limits", "network", "effects", "mutating", "needs", "needsSpec", "sandbox", "spec"];

// needsSpecJSON is a needsSpec with its env, secrets and config schemas in
// JSON Schema (zod converted).
const needsSpecJSON = (id, needs) => {
  if (needs === undefined) return undefined;
  if (needs === null || typeof needs !== "object" || Array.isArray(needs)) throw new Error(`tool "${id}": needsSpec is an object`);
  const out = { ...needs };
  for (const slot of ["env", "secrets", "config"]) {
    if (needs[slot] === undefined) continue;
    if (needs[slot] === null || typeof needs[slot] !== "object") throw new Error(`tool "${id}": needsSpec.${slot} maps names to schemas`);
    out[slot] = Object.fromEntries(Object.entries(needs[slot]).map(([k, v]) => [k, toJSONSchema(v, "input")]));
  }
  return out;
};

/**
 * Defines a tool, in kindgi's shape: `{ id, version, description, input,
 * output, handler }` or, for a declarative HTTP tool, `spec: { kind:
 * "http", method, urlTemplate, … }` instead of a handler (packd makes the
 * request under the tool's network policy, and binds its authorization as
 * a credential the pack never holds); and `effects`, `mutating`,
 * `needsSpec`, `needs`, `sandbox`, `limits`, `network`, which `packd
 * index` writes (`mutating: false` makes packd refuse the tool's writes).
 * The handler gets the validated input (with the schema's defaults; for
 * a zod schema, zod's output) and the call's context, and returns the
 * output (or a promise of it). Answers `{ kind: "ok", value: tool }` or
 * `{ kind: "err", error }`; under packd an error stops the module's load.
 */
export function defineTool(spec) {
  if (spec === null || typeof spec !== "object") return registered(fail("invalid-tool-definition", "defineTool takes an object"));
  const { id, version } = spec;
  if (typeof id !== "string" || !(id === "*" || ID.test(id)))
    return registered(fail("invalid-tool-definition", `a tool's id is a string of letters, digits and . _ : - (got ${JSON.stringify(id)})`));
  if (typeof version !== "string" || !SEMVER.test(version))
    return registered(fail("invalid-tool-definition", `tool "${id}": version must be an exact semver such as 1.2.3 (got ${JSON.stringify(version)})`));
  if (spec.handler !== undefined && spec.spec !== undefined)
    return registered(fail("invalid-tool-definition", `tool "${id}": handler and spec are exclusive: give code or a declarative spec, not both`));
  if (spec.spec === undefined && typeof spec.handler !== "function") return registered(fail("invalid-tool-definition", `tool "${id}" has no handler function (nor a declarative spec)`));
  if (spec.mutating !== undefined && typeof spec.mutating !== "boolean")
    return registered(fail("invalid-tool-definition", `tool "${id}": mutating is true or false (got ${JSON.stringify(spec.mutating)})`));
  if (spec.effects !== undefined) {
    if (!Array.isArray(spec.effects)) return registered(fail("invalid-tool-definition", `tool "${id}": effects is an array`));
    const bad = spec.effects.find((e) => e === null || typeof e !== "object" || !EFFECT_KINDS.includes(e.kind));
    if (bad !== undefined)
      return registered(fail("unknown-effect", `tool "${id}": effect ${JSON.stringify(bad && bad.kind)} is not one of ${EFFECT_KINDS.join(", ")}`));
  }
  let input, output, needsSpec, network, handler;
  try {
    input = toJSONSchema(spec.input, "input");
    output = toJSONSchema(spec.output, "output");
    needsSpec = needsSpecJSON(id, spec.needsSpec);
  } catch (e) {
    return registered(fail("invalid-schema", `tool "${id}": ${e.message}`));
  }
  try {
    network = spec.spec === undefined ? spec.network : httpNetwork(id, spec.spec, spec.network);
    handler = spec.spec === undefined ? spec.handler : httpHandler(id, spec.spec, runtime !== undefined);
  } catch (e) {
    return registered(fail("invalid-tool-definition", e.message));
  }
  const data = { ...spec, needsSpec, network };
  const tool = { id, version };
  if (data.description !== undefined) data.description = String(data.description);
  for (const k of [...TOOL_DATA, "metadata"])
    if (data[k] !== undefined) tool[k] = data[k];
  if (input !== undefined) tool.input = input;
  if (output !== undefined) tool.output = output;
  tool.handler = handler;
  if (isZodSchema(spec.input)) tool.inputZod = spec.input;
  if (isZodSchema(spec.output)) tool.outputZod = spec.output;
  if (runtime) {
    const zin = isZodSchema(spec.input) ? spec.input : null;
    if (zin) warm(zin, tool.input);
    const described = { id, version, input, output, handler: (value, ctx) => run(handler, zin, tool.needsSpec, value, ctx) };
    for (const k of TOOL_DATA) if (tool[k] !== undefined) described[k] = tool[k];
    runtime.tool(described);
  }
  return { kind: "ok", value: tool };
}

/** The same as defineTool, as a promise (kindgi's defineToolAsync). */
export async function defineToolAsync(spec) {
  return defineTool(spec);
}

// run calls a tool's handler under packd: its input through zod when the
// schema is zod, its context with the declared env (needs.js).
const run = (handler, zin, needs, value, ctx) => {
  const c = toolContext(ctx);
  const env = envForCall(needs, c.env);
  if (env !== undefined) c.env = env;
  return handler(zin ? parseWith(zin, value) : value, c);
};

// withDefaults fills in a JSON Schema's property defaults (nested objects
// too) on a copy of value, as Ajv's useDefaults does for kindgi's checks.
const withDefaults = (schema, value) => {
  if (schema === null || typeof schema !== "object") return value;
  if (value === undefined && "default" in schema) value = JSON.parse(JSON.stringify(schema.default));
  if (value === null || typeof value !== "object" || Array.isArray(value) || !schema.properties) return value;
  const out = { ...value };
  for (const [k, sub] of Object.entries(schema.properties)) {
    const v = withDefaults(sub, out[k]);
    if (v !== undefined) out[k] = v;
  }
  return out;
};

/**
 * Defines a guardrail check, in kindgi's shape: `{ id, kind, evaluate,
 * configSchema, validateConfig }`, and, for the index entry packd writes,
 * `guardrail`, `action`, `severity`, `limits`, `network` (or a
 * guardrail object that names the check: defineGuardrail). evaluate gets
 * the guardrail's config (its schema's defaults filled in; for zod,
 * zod's output), the trace and the bindings, and returns `{ passed:
 * boolean, ... }` (or a promise of it). The check has validateConfig
 * (the schema's, then the spec's own: a message, or undefined when the
 * config fits), configJsonSchema and configZod. A bad definition throws;
 * under packd it stops the module's load.
 */
export function defineCheck(spec) {
  const bad = (message) => {
    throw new Error(message);
  };
  if (spec === null || typeof spec !== "object") bad("defineCheck takes an object");
  const { id, evaluate } = spec;
  if (typeof id !== "string" || !ID.test(id)) bad(`a check's id is a string of letters, digits and . _ : - (got ${JSON.stringify(id)})`);
  if (typeof evaluate !== "function") bad(`check "${id}" has no evaluate function`);
  if (spec.validateConfig !== undefined && typeof spec.validateConfig !== "function") bad(`check "${id}": validateConfig is a function`);
  const schema = spec.configSchema !== undefined ? spec.configSchema : spec.config;
  let configSchema;
  try {
    configSchema = toJSONSchema(schema, "input");
  } catch (e) {
    bad(`check "${id}": ${e.message}`);
  }
  if (runtime && isZodSchema(schema)) warm(schema, configSchema);
  const resolve = isZodSchema(schema)
    ? (config) => parseWith(schema, config === undefined ? {} : config)
    : (config) => withDefaults(configSchema, config === undefined ? {} : config);
  const own = spec.validateConfig;
  const bySchema =
    configSchema === undefined
      ? undefined
      : isZodSchema(schema)
        ? (config) => {
            const r = schema.safeParse(config, { jitless: true });
            if (r.success) return undefined;
            const i = r.error.issues[0];
            return `${(i.path || []).map((p) => `/${String(p)}`).join("")} ${i.message}`.trim();
          }
        : (config) => firstIssue(configSchema, config);
  const validateConfig = bySchema && own ? (config) => bySchema(config) ?? own(config) : bySchema || own;
  const check = {
    id,
    ...(spec.guardrail !== undefined && { guardrail: spec.guardrail }),
    ...(spec.kind !== undefined && { kind: spec.kind }),
    ...(spec.action !== undefined && { action: spec.action }),
    ...(spec.severity !== undefined && { severity: spec.severity }),
    ...(configSchema !== undefined && { configSchema, configJsonSchema: configSchema }),
    ...(spec.limits !== undefined && { limits: spec.limits }),
    ...(spec.network !== undefined && { network: spec.network }),
    evaluate: async (config, trace, bindings = {}) => evaluate(resolve(config), trace, bindings),
    ...(validateConfig !== undefined && { validateConfig }),
    configZod: isZodSchema(schema) ? schema : undefined,
  };
  if (runtime) {
    const described = { id, evaluate: (config, trace) => check.evaluate(config, trace) };
    for (const k of ["guardrail", "kind", "action", "severity", "configSchema", "limits", "network"]) if (check[k] !== undefined) described[k] = check[k];
    runtime.check(described);
  }
  return check;
}

/**
 * Declares a guardrail, kindgi's object that binds a check to its config
 * and says what a violation does: `{ id, check, kind, action, name,
 * severity, scope, config, sandbox }`. packd serves the check; `packd
 * index` writes the guardrail's entry from this object over what the
 * check says. A kindgi pack default-exports it from its guardrails/
 * folder; registerModules does this for each such export. Returns the
 * guardrail.
 */
export function defineGuardrail(g) {
  if (g === null || typeof g !== "object") throw new Error("a guardrail is an object");
  if (typeof g.id !== "string" || !ID.test(g.id)) throw new Error(`a guardrail's id is a string of letters, digits and . _ : - (got ${JSON.stringify(g.id)})`);
  if (typeof g.check !== "string" || !g.check) throw new Error(`guardrail "${g.id}" names no check (check: the id of a defineCheck)`);
  if (g.action === null || typeof g.action !== "object" || Array.isArray(g.action))
    throw new Error(`guardrail "${g.id}": action is an object, such as { "on-violation": "halt" }`);
  if (runtime) runtime.guardrail(g);
  return g;
}

const isGuardrail = (v) => v !== null && typeof v === "object" && typeof v.check === "string" && "action" in v && typeof v.evaluate !== "function";

/**
 * Registers what a kindgi pack's modules default-export that defining did
 * not already register: guardrail objects (a tool or a check registers
 * when it is defined). `packd build-ts` calls it over every module its
 * discovery finds; a pack with one entry file calls defineGuardrail.
 */
export function registerModules(modules) {
  for (const m of modules) {
    const v = m && m.default;
    if (isGuardrail(v)) defineGuardrail(v);
  }
}

/**
 * Declares the process environment names the pack reads (process.env):
 * required ones keep the service from being ready without them. packd
 * gives a pack only the names its index declares.
 */
export function declareEnv({ required = [], optional = [] } = {}) {
  if (runtime) runtime.env(required, optional);
}

/** Whether this code runs inside packd (as opposed to Node, in a test). */
export const inPackd = runtime !== undefined;
