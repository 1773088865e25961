// What the JavaScript runtime gives a pack beyond the DOM's types
// (GUEST-ABI.md, "JavaScript"), for the type check of packd's own packs.
declare const process: { readonly env: Record<string, string | undefined> };
