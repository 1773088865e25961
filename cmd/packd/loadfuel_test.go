package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAFiftyToolZodPackLoadsAtTheDefault: a TypeScript pack of 50 tools,
// each with a zod input of six fields (strings with bounds, an enum with a
// default, an optional array, a nested object with a pattern), builds its
// schemas in _initialize: about 3.7e9 units of load fuel, past the old
// default of 2e9, within today's 1e10 (docs/operations.md, --load-fuel).
// packd index and packd check load it at the default.
func TestAFiftyToolZodPackLoadsAtTheDefault(t *testing.T) {
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	esbuild := filepath.Join(root, "node_modules", ".bin", "esbuild")
	if _, err := os.Stat(esbuild); err != nil {
		t.Fatal("esbuild is not installed: make test installs it (npm ci)")
	}
	dir := t.TempDir()
	var src strings.Builder
	src.WriteString("import { defineTool } from \"@packd/sdk\";\nimport { z } from \"zod\";\n")
	for i := range 50 {
		fmt.Fprintf(&src, `
export const t%d = defineTool({
  id: "zod50.tool%d", version: "1.0.0", description: "Tool %d.",
  input: z.object({
    customerId: z.string().min(1).max(64).describe("The customer."),
    amountCents: z.number().int().min(0).max(10_000_000),
    currency: z.enum(["USD", "EUR", "GBP", "JPY"]).default("USD"),
    tags: z.array(z.string().max(32)).max(10).optional(),
    note: z.string().max(500).optional(),
    address: z.object({ street: z.string(), city: z.string(), zip: z.string().regex(/^[0-9]{5}$/) }).optional(),
  }),
  output: z.object({ id: z.string(), ok: z.boolean(), total: z.number() }),
  handler: async (input) => ({ id: input.customerId, ok: true, total: input.amountCents }),
});
`, i, i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "pack.ts"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "pack.js")
	cmd := exec.Command(esbuild, append([]string{filepath.Join(dir, "pack.ts")}, esbuildFlags(bundle)...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(root, "node_modules"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("esbuild: %v\n%s", err, out)
	}
	if r := packd(t, "build-js", "-o", filepath.Join(dir, "zod50.wasm"), bundle); r.code != 0 {
		t.Fatalf("build-js: %d %s", r.code, r.stderr)
	}
	index := filepath.Join(dir, "index.json")
	_ = os.WriteFile(index, []byte(`{"v":1,"packId":"zod50","packVersion":"1.0.0","artifactVersion":"zod50-1","publishedAt":"2026-12-05T00:00:00.000Z","tools":[],"guardrails":[],"agents":[],"flows":[]}`), 0o644)
	if r := packd(t, "index", "--index", index, "--cache-dir", "", filepath.Join(dir, "zod50.wasm")); r.code != 0 {
		t.Fatalf("packd index at the default load fuel: %d %s", r.code, r.stderr)
	}
	if r := packd(t, "check", "--index", index, "--cache-dir", ""); r.code != 0 || !strings.Contains(r.stdout, "50 tool(s)") {
		t.Fatalf("packd check at the default load fuel: %d %s%s", r.code, r.stdout, r.stderr)
	}
	// Under the old default it does not load, and the problem names the flag.
	if r := packd(t, "check", "--index", index, "--cache-dir", "", "--load-fuel", "2000000000"); r.code != 1 || !strings.Contains(r.stdout, "ran over the load fuel of 2000000000 (packd's --load-fuel") {
		t.Fatalf("packd check at 2e9: %d %s%s", r.code, r.stdout, r.stderr)
	}
}
