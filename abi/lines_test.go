package abi

import (
	"strings"
	"testing"
)

// TestLineTableRewrite: file:N becomes the source's file:line where the
// table maps line N; a line it does not map, a longer name ending in the
// file's, and a number past the table stay as they are.
func TestLineTableRewrite(t *testing.T) {
	tab := ParseLineTable([]byte(`{"file":"pack.js","sources":["src/pack.ts","node_modules/zod/index.js"],"lines":[0,1, -1,0, 1,40, 0,7]}`))
	if tab == nil {
		t.Fatal("a valid table was refused")
	}
	for in, want := range map[string]string{
		"Error: x\n    at handler (pack.js:4)\n    at parse (pack.js:3)": "Error: x\n    at handler (src/pack.ts:7)\n    at parse (node_modules/zod/index.js:40)",
		"(at pack.js:2)":                                   "(at pack.js:2)",
		"mypack.js:1 and a/pack.js:1":                      "mypack.js:1 and a/pack.js:1",
		"pack.js:5 pack.js:99999999999 pack.js: pack.js:0": "pack.js:5 pack.js:99999999999 pack.js: pack.js:0",
		"pack.js:1pack.js:4":                               "src/pack.ts:1pack.js:4",
		"no positions":                                     "no positions",
	} {
		if got := tab.Rewrite(in); got != want {
			t.Errorf("Rewrite(%q) = %q, want %q", in, got, want)
		}
	}
	var none *LineTable
	if none.Rewrite("pack.js:1") != "pack.js:1" {
		t.Error("a nil table rewrote")
	}
	for _, bad := range []string{
		``, `nope`, `{"file":"","sources":[],"lines":[]}`,
		`{"file":"pack.js","sources":["a"],"lines":[1,1]}`,
		`{"file":"pack.js","sources":["a"],"lines":[0]}`,
		`{"file":"pack.js","sources":["a"],"lines":[0,0]}`,
		`{"file":"pack.js","sources":["a"],"lines":[-2,0]}`,
		`{"file":"pack.js","sources":["a"],"lines":[0,1],"x":` + strings.Repeat(" ", MaxLinesSection) + `1}`,
	} {
		if ParseLineTable([]byte(bad)) != nil {
			t.Errorf("ParseLineTable(%.60q) accepted it", bad)
		}
	}
}

// TestALineTableCannotBloatErrors: a module's table of long source names
// over a message of many File:N grows it by at most 64 KiB (before, by
// the name's length for every occurrence); names over 512 bytes or with
// control characters are refused.
func TestALineTableCannotBloatErrors(t *testing.T) {
	long := strings.Repeat("a", MaxSourceName)
	tab := ParseLineTable([]byte(`{"file":"p.js","sources":["` + long + `"],"lines":[0,1]}`))
	if tab == nil {
		t.Fatal("refused")
	}
	msg := strings.Repeat("p.js:1 ", 100000)
	if got := tab.Rewrite(msg); len(got) > len(msg)+maxRewriteGrowth+MaxSourceName+16 {
		t.Fatalf("grew from %d to %d bytes", len(msg), len(got))
	}
	for _, bad := range []string{
		`{"file":"p.js","sources":["` + long + `a"],"lines":[0,1]}`,
		`{"file":"p.js","sources":["a\nb"],"lines":[0,1]}`,
		`{"file":"p.js","sources":[""],"lines":[0,1]}`,
	} {
		if ParseLineTable([]byte(bad)) != nil {
			t.Errorf("accepted %.40q", bad)
		}
	}
}
