// A tool's declared env (`needsSpec.env`, in kindgi's shape): what a
// handler's ctx.env holds. Both where a tool runs under packd and where
// invokeTool runs it in a test, the handler sees the names the tool
// declares and no others: each the caller's value, else its schema's
// default; a declared name with neither stops the call before the handler
// runs, as kindgi's runtime stops it before it sends the call.

/** A call that was not run, and why (kindgi's ToolPreconditionError). */
export class ToolPreconditionError extends Error {
  constructor(reason, message) {
    super(message);
    this.name = "ToolPreconditionError";
    this.reason = reason;
  }
}

/**
 * The env a handler gets: undefined when the tool declares none (the
 * context's own then stands), else the declared names' values. check, when
 * given, tests a value against its schema and answers a message or
 * undefined; a value it refuses stops the call too.
 */
export function envForCall(needsSpec, given, check) {
  const declared = needsSpec && needsSpec.env;
  if (declared === undefined || declared === null) return undefined;
  const out = {};
  for (const [name, schema] of Object.entries(declared)) {
    let v = given && Object.prototype.hasOwnProperty.call(given, name) ? given[name] : undefined;
    if (v === undefined && schema && typeof schema === "object" && "default" in schema) v = schema.default;
    if (v === undefined) throw new ToolPreconditionError("env-value-missing", `the env value ${name} the tool declares is not set and its schema has no default`);
    const problem = check ? check(schema, v) : undefined;
    if (problem !== undefined) throw new ToolPreconditionError("env-value-invalid", `the env value ${name} does not fit its schema: ${problem}`);
    out[name] = v;
  }
  return out;
}
