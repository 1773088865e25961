// What pack code has of Node's globals under packd (GUEST-ABI.md,
// "JavaScript"): process.env, holding the environment names the index
// declares (env.required, env.optional); a call may write to it, and the
// next finds it as the snapshot had it. A pack's own tsconfig includes this
// file for its sources; its tests, which run on node, take Node's types
// instead (@types/node).
declare global {
  var process: { readonly env: Record<string, string | undefined> };
}

export {};
