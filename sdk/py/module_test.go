package pysdk_test

import (
	"bytes"
	"strings"
	"testing"

	pysdk "github.com/kindgi/packd/sdk/py"
)

// TestModule: a pack's module is the runtime with the pack's sources in a
// data segment of their own, and Module refuses what is not a pack's
// Python, saying why.
func TestModule(t *testing.T) {
	rt, err := pysdk.Runtime()
	if err != nil || !bytes.HasPrefix(rt, []byte("\x00asm")) {
		t.Fatalf("the runtime: %v", err)
	}
	src := []byte("from packd_sdk import define_tool\ndefine_tool(id='p.t', handler=lambda i: i)\n")
	m, err := pysdk.Module(rt, []string{"tools"}, []pysdk.Source{{Module: "tools", File: "tools.py", Text: src}})
	if err != nil || !bytes.Contains(m, []byte(`"source":"from packd_sdk import define_tool\ndefine_tool(id='p.t', handler=lambda i: i)\n"`)) {
		t.Fatalf("module: %v", err)
	}
	if _, err := pysdk.Module(m, []string{"tools"}, []pysdk.Source{{Module: "tools", File: "tools.py", Text: src}}); err == nil || !strings.Contains(err.Error(), "already") {
		t.Fatalf("a module made twice: %v", err)
	}
	for _, c := range []struct {
		name    string
		main    []string
		sources []pysdk.Source
		want    string
	}{
		{"no sources", nil, nil, "no Python sources"},
		{"a name Python cannot import", nil, []pysdk.Source{{Module: "my-tool", File: "my-tool.py"}}, `"my-tool" is not a Python module name`},
		{"a name starting with a digit", nil, []pysdk.Source{{Module: "pkg.1x", File: "pkg/1x.py"}}, "is not a Python module name"},
		{"a module twice", nil, []pysdk.Source{{Module: "a", File: "a.py"}, {Module: "a", File: "a/__init__.py", Package: true}}, "module a twice"},
		{"not UTF-8", nil, []pysdk.Source{{Module: "a", File: "a.py", Text: []byte{'#', 0xe9}}}, "a.py is not UTF-8"},
		{"a main module not among them", []string{"b"}, []pysdk.Source{{Module: "a", File: "a.py"}}, "module b is not among the sources"},
		{"too much", nil, []pysdk.Source{{Module: "a", File: "a.py", Text: bytes.Repeat([]byte("#"), pysdk.MaxBundle+1)}}, "over the"},
	} {
		if _, err := pysdk.Module(rt, c.main, c.sources); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
