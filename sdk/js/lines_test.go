package jssdk

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/wasmbin"
)

// TestLineTable: each line of the bundle maps to the first source position
// a segment of it names (deltas across the whole mappings, a segment
// without a source skipped); a line without one maps to nothing; the
// table travels in the module's custom section, which packd reads back.
func TestLineTable(t *testing.T) {
	sm := `{"version":3,"sources":["../src/a.ts","../src/b.ts"],"mappings":"AAAA;AACA;;AAEA;ACAA;A,CAAC"}`
	table, err := LineTable("pack.js", []byte(sm), func(s string) string { return strings.TrimPrefix(s, "../") })
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"file":"pack.js","sources":["src/a.ts","src/b.ts"],"lines":[0,1,0,2,-1,0,0,4,1,4,1,4]}`; string(table) != want {
		t.Fatalf("table %s, want %s", table, want)
	}
	mod, err := Module(Runtime, []byte("1;"))
	if err != nil {
		t.Fatal(err)
	}
	with := WithLines(mod, table)
	if !bytes.HasPrefix(with, mod) {
		t.Fatal("WithLines changed the module's code")
	}
	got := abi.ParseLineTable(wasmbin.Custom(with, abi.SectionLines))
	if got == nil || got.Rewrite("at f (pack.js:6)") != "at f (src/b.ts:4)" {
		t.Fatalf("read back: %+v", got)
	}
	// A name over what a table holds keeps its tail; a control character
	// becomes '?': the table stays one packd reads.
	long := "/" + strings.Repeat("d/", 400) + "x.ts"
	table, err = LineTable("pack.js", []byte(`{"version":3,"sources":["`+long+`","a\tb"],"mappings":"AAAA;ACAA"}`), func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	got = abi.ParseLineTable(table)
	if got == nil || !strings.HasPrefix(got.Sources[0], "...") || !strings.HasSuffix(got.Sources[0], "d/x.ts") || len(got.Sources[0]) != abi.MaxSourceName || got.Sources[1] != "a?b" {
		t.Fatalf("names: %s", table)
	}
	for _, bad := range []string{`{"version":2}`, `{"version":3,"sources":["a"],"mappings":"AAAA;AAAg"}`, `{"version":3,"sources":["a"],"mappings":"AA*A"}`, `{"version":3,"sources":["a"],"mappings":"ACAA"}`, `[`} {
		if _, err := LineTable("pack.js", []byte(bad), func(s string) string { return s }); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
