// Hostile JavaScript: each tool tries to hold on to the host or escape its
// limits one way; packd must stop every one within its call's deadline,
// fuel and memory, and go on serving.
import { defineTool } from "@packd/sdk";

const tool = (id: string, handler: (input: any) => unknown) =>
  defineTool({ id: `jshostile.${id}`, version: "1.0.0", input: { type: "object" }, output: {}, handler });

tool("loop", () => {
  for (;;) {}
});
tool("recurse", () => {
  const f = (n: number): number => f(n + 1) + 1;
  return f(0);
});
tool("alloc", () => {
  const keep: string[] = [];
  for (;;) keep.push("x".repeat(1 << 20) + keep.length);
});
tool("jobs", () => {
  const again = (): Promise<void> => Promise.resolve().then(again);
  return again();
});
tool("timers", () => new Promise(() => setInterval(() => {}, 0)));
tool("never", () => new Promise(() => {}));
tool("eval", () => ({ type: typeof (0, eval)("1+1"), fn: new Function("return 40 + 2")() }));
tool("json", (input) => JSON.parse(input.text));
// Live strings that move from size to size in bulk (4 MiB of one size,
// dropped, then of the next): the runtime's allocator must not keep every
// size's blocks for that size alone, or 64 MiB runs out.
tool("churn", () => {
  let made = 0;
  for (let k = 1; k <= 32; k++) {
    const base = "y".repeat(k * 16);
    const n = Math.floor((4 << 20) / (k * 16 + 24));
    const keep: string[] = new Array(n);
    for (let i = 0; i < n; i++) keep[i] = base + i;
    made += keep.length;
  }
  return { made };
});
