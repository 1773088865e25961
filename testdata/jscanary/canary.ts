// An isolation canary written in TypeScript: it keeps what every call gave
// it in as many kinds of state as a JavaScript pack can hold (a module
// variable, a Set, a growing array, a global, process.env, a job queued
// after it answered) and answers with what it finds of earlier calls.
// Under packd every call must find nothing:
// {"last":null,"tenants":[],"heap":0,"jobs":0,"env":"","global":null}.
import { defineTool } from "@packd/sdk";

let last: unknown = null;
const tenants = new Set<string>();
const heap: string[] = [];
let jobs = 0;
const drawnAtInit = Math.random();

defineTool({
  id: "canary.keep",
  version: "1.0.0",
  input: { type: "object" },
  output: { type: "object" },
  handler: async (input, ctx) => {
    const g = globalThis as { canaryLast?: unknown };
    const found = {
      last,
      tenants: [...tenants].sort(),
      heap: heap.length,
      jobs,
      env: process.env.CANARY_LAST ?? "",
      global: g.canaryLast ?? null,
    };
    last = input;
    tenants.add(ctx.tenantId);
    heap.push(JSON.stringify(input).repeat(1000));
    process.env.CANARY_LAST = JSON.stringify(input);
    g.canaryLast = input;
    Promise.resolve().then(() => jobs++);
    setTimeout(() => jobs++, 0);
    return found;
  },
});

// Math.random in a pooled call: two draws, and one made when the module
// loaded (the snapshot's). Every call must draw numbers of its own.
defineTool({
  id: "canary.random",
  version: "1.0.0",
  input: { type: "object" },
  output: { type: "object" },
  handler: async () => ({ atInit: drawnAtInit, draws: [Math.random(), Math.random()] }),
});
