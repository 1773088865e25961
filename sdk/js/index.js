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

/**
 * Defines a tool: `{ id, version, description, input, output, handler,
 * limits, network }`. The handler gets the validated input (with the
 * schema's defaults; for a zod schema, zod's output) and the call's
 * context, and returns the output (or a promise of it). Answers
 * `{ kind: "ok", value: tool }` or `{ kind: "err", error }`; under packd
 * an error stops the module's load.
 */
export function defineTool(spec) {
  if (spec === null || typeof spec !== "object") return registered(fail("invalid-tool-definition", "defineTool takes an object"));
  const { id, version, handler } = spec;
  if (typeof id !== "string" || !(id === "*" || ID.test(id)))
    return registered(fail("invalid-tool-definition", `a tool's id is a string of letters, digits and . _ : - (got ${JSON.stringify(id)})`));
  if (typeof version !== "string" || !SEMVER.test(version))
    return registered(fail("invalid-tool-definition", `tool "${id}": version must be an exact semver such as 1.2.3 (got ${JSON.stringify(version)})`));
  if (typeof handler !== "function") return registered(fail("invalid-tool-definition", `tool "${id}" has no handler function`));
  let input, output;
  try {
    input = toJSONSchema(spec.input, "input");
    output = toJSONSchema(spec.output, "output");
  } catch (e) {
    return registered(fail("invalid-schema", `tool "${id}": ${e.message}`));
  }
  const tool = {
    id,
    version,
    ...(spec.description !== undefined && { description: String(spec.description) }),
    ...(input !== undefined && { input }),
    ...(output !== undefined && { output }),
    ...(spec.limits !== undefined && { limits: spec.limits }),
    ...(spec.network !== undefined && { network: spec.network }),
    handler,
    ...(isZodSchema(spec.input) && { inputZod: spec.input }),
    ...(isZodSchema(spec.output) && { outputZod: spec.output }),
  };
  if (runtime) {
    const zin = isZodSchema(spec.input) ? spec.input : null;
    if (zin) warm(zin, tool.input);
    runtime.tool({
      id: tool.id,
      version: tool.version,
      description: tool.description,
      input: tool.input,
      output: tool.output,
      limits: tool.limits,
      network: tool.network,
      handler: (value, ctx) => handler(zin ? parseWith(zin, value) : value, toolContext(ctx)),
    });
  }
  return { kind: "ok", value: tool };
}

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
 * Defines a guardrail check: `{ id, evaluate, configSchema (or config),
 * guardrail, kind, action, severity, limits, network }`. evaluate gets the
 * guardrail's config (its schema's defaults filled in; for zod, zod's
 * output) and the trace, and returns `{ passed: boolean, ... }` (or a
 * promise of it). Returns the check; under packd a bad definition stops
 * the module's load, elsewhere it throws.
 */
export function defineCheck(spec) {
  const bad = (message) => {
    throw new Error(message);
  };
  if (spec === null || typeof spec !== "object") bad("defineCheck takes an object");
  const { id, evaluate } = spec;
  if (typeof id !== "string" || !ID.test(id)) bad(`a check's id is a string of letters, digits and . _ : - (got ${JSON.stringify(id)})`);
  if (typeof evaluate !== "function") bad(`check "${id}" has no evaluate function`);
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
  const check = {
    id,
    ...(spec.guardrail !== undefined && { guardrail: spec.guardrail }),
    ...(spec.kind !== undefined && { kind: spec.kind }),
    ...(spec.action !== undefined && { action: spec.action }),
    ...(spec.severity !== undefined && { severity: spec.severity }),
    ...(configSchema !== undefined && { configSchema }),
    ...(spec.limits !== undefined && { limits: spec.limits }),
    ...(spec.network !== undefined && { network: spec.network }),
    evaluate: (config, trace, bindings = {}) => evaluate(resolve(config), trace, bindings),
    ...(isZodSchema(schema) && { configZod: schema }),
  };
  if (runtime) {
    const { evaluate: run, configZod, ...described } = check;
    runtime.check({ ...described, evaluate: (config, trace) => run(config, trace) });
  }
  return check;
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
