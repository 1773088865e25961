// Declarative HTTP tools (`defineTool({ spec: { kind: "http", … } })`, in
// kindgi's shape): the handler the SDK makes from the spec, and the
// network policy it needs. The request goes out through fetch, hence
// packd's egress under the tool's policy; the spec's authorization is
// bound as a credential in that policy (docs/index-format.md,
// "Credentials the pack never holds"), so packd writes it into the
// request itself and the pack's code never holds the secret.

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"];

const fail = (id, message) => {
  throw new Error(`http tool "${id}": ${message}`);
};

/** The literal host of a URL template, or an error when the host has a placeholder. */
const templateHost = (id, template) => {
  const m = /^https?:\/\/([^/?#]*)/i.exec(template);
  if (!m) fail(id, `urlTemplate must start with http:// or https:// (got ${JSON.stringify(template)})`);
  // The port may come from the input (any port of an allowed host is
  // allowed); the host may not.
  const authority = m[1].replace(/^[^@]*@/, "").replace(/:(\d*|\{\w+\})$/, "");
  if (/[{}]/.test(authority)) fail(id, `the host of urlTemplate is fixed when the tool is defined: no {placeholder} in ${JSON.stringify(authority)}`);
  const host = authority;
  if (!host) fail(id, `urlTemplate names no host (${JSON.stringify(template)})`);
  return host.toLowerCase();
};

/** The credential a spec's authorization binds, as the index writes it. */
const credential = (id, auth) => {
  const ref = auth.secretRef;
  if (ref === null || typeof ref !== "object" || typeof ref.name !== "string" || !ref.name)
    fail(id, "authorization.secretRef needs a name (the call's ctx.secrets key)");
  if (auth.kind === "bearer") return { secret: ref.name, header: "Authorization", scheme: "Bearer" };
  if (auth.kind === "header") {
    if (typeof auth.headerName !== "string" || !auth.headerName) fail(id, "authorization of kind header needs a headerName");
    return { secret: ref.name, header: auth.headerName };
  }
  return fail(id, `authorization.kind is "bearer" or "header" (got ${JSON.stringify(auth.kind)})`);
};

/**
 * checkSpec refuses a spec the handler could not run, at definition, and
 * answers the tool's network policy: the one given, with the template's
 * host allowed and the authorization bound to it; or, when none is given,
 * an allowlist of that host.
 */
export function httpNetwork(id, spec, network) {
  if (spec === null || typeof spec !== "object") fail(id, "spec is an object");
  if (spec.kind !== "http") fail(id, `spec.kind "${spec.kind}" is not one packd runs (only "http")`);
  if (!METHODS.includes(spec.method)) fail(id, `method is one of ${METHODS.join(", ")} (got ${JSON.stringify(spec.method)})`);
  if (typeof spec.urlTemplate !== "string") fail(id, "urlTemplate is a string");
  const host = templateHost(id, spec.urlTemplate);
  const out = network === undefined ? { kind: "allowlist", hosts: [host] } : { ...network };
  if (out.kind === "none") fail(id, 'its network policy is "none", so its request could never go out');
  if (out.kind === "allowlist") {
    const hosts = Array.isArray(out.hosts) ? out.hosts : [];
    out.hosts = hosts.includes(host) ? hosts : [...hosts, host];
  }
  if (spec.authorization !== undefined) {
    if (spec.authorization === null || typeof spec.authorization !== "object") fail(id, "authorization is an object");
    out.credentials = { ...(out.credentials || {}), [host]: credential(id, spec.authorization) };
  }
  return out;
}

const primitive = (v) => v !== null && v !== undefined && typeof v !== "object" && typeof v !== "function" && typeof v !== "symbol";

/**
 * The handler of a declarative HTTP tool. Under packd (bound true) packd
 * writes the authorization itself; elsewhere (a pack's tests under Node)
 * the handler writes it from ctx.resolveSecret, as kindgi's runtime
 * does, or from ctx.secrets, as packd would.
 */
export function httpHandler(id, spec, bound) {
  return async (input, ctx) => {
    if (input === null || typeof input !== "object" || Array.isArray(input))
      fail(id, `needs an object input to fill its urlTemplate (got ${Array.isArray(input) ? "array" : typeof input})`);
    const used = new Set();
    const url = spec.urlTemplate.replace(/\{(\w+)\}/g, (_, k) => {
      if (!(k in input)) fail(id, `urlTemplate names {${k}}, which the input lacks`);
      if (!primitive(input[k])) fail(id, `urlTemplate's {${k}} must be a string, number or boolean (got ${typeof input[k]})`);
      used.add(k);
      return encodeURIComponent(String(input[k]));
    });
    const fill = (t) => t.replace(/\{(\w+)\}/g, (m, k) => (k in input ? (input[k] == null ? "" : String(input[k])) : m));
    const headers = {};
    for (const h of spec.headers || []) headers[h.name] = fill(String(h.value));
    const auth = spec.authorization;
    if (auth && !bound) {
      const ref = auth.secretRef;
      const secret = ctx.resolveSecret ? await ctx.resolveSecret(ref) : ctx.secrets && ctx.secrets[ref.name];
      if (typeof secret !== "string") fail(id, `its authorization needs the secret ${ref.name}: pass it in ctx.secrets (or a ctx.resolveSecret)`);
      const c = credential(id, auth);
      headers[c.header] = c.scheme ? `${c.scheme} ${secret}` : secret;
    }
    let body, type;
    if (!(spec.method === "GET" && spec.requestBody === undefined)) {
      const kind = (spec.requestBody && spec.requestBody.kind) || "json-input";
      if (kind === "json-input") {
        const rest = Object.fromEntries(Object.entries(input).filter(([k]) => !used.has(k)));
        body = Object.keys(rest).length ? JSON.stringify(rest) : "";
        if (body) type = "application/json";
      } else if (kind === "input-passthrough") [body, type] = [JSON.stringify(input), "application/json"];
      else if (kind === "text") [body, type] = [fill(String(spec.requestBody.template)), "text/plain"];
      else fail(id, `requestBody.kind "${kind}" is not json-input, input-passthrough or text`);
    }
    if (type && !Object.keys(headers).some((k) => k.toLowerCase() === "content-type")) headers["Content-Type"] = type;
    const ms = spec.timeoutMs ?? 30000;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error(`http tool "${id}" timed out after ${ms} ms`)), ms);
    let res;
    try {
      res = await fetch(url, { method: spec.method, headers, ...(body !== undefined && { body }), signal: controller.signal });
    } finally {
      clearTimeout(timer);
    }
    const min = (spec.successStatus && spec.successStatus.min) ?? 200;
    const max = (spec.successStatus && spec.successStatus.max) ?? 299;
    const text = await res.text();
    if (res.status < min || res.status > max) fail(id, `got status ${res.status}${res.statusText ? " " + res.statusText : ""}: ${text.slice(0, 512)}`);
    if (spec.parseJson === false) return text;
    if (text.length === 0) return null;
    try {
      return JSON.parse(text);
    } catch (e) {
      return fail(id, `its answer is not JSON: ${e.message}`);
    }
  };
}
