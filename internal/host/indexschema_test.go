package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kindgi/packd/internal/ojson"
)

// baseIndex is a valid index with every optional field once.
const baseIndex = `{
  "v": 1, "packId": "acme.ledger", "packVersion": "1.0.0", "artifactVersion": "20261001.1",
  "publishedAt": "2026-10-01T12:00:00.000Z",
  "env": {"required": ["LEDGER_URL"], "optional": ["LOG_LEVEL"]},
  "tools": [{"id": "acme.ledger.record-expense", "version": "1.0.0", "description": "Records an expense.",
    "input": {"type": "object"}, "output": true, "modulePath": "tools/ledger.wasm",
    "effects": [{"kind": "writes"}], "needs": [{}], "needsSpec": {}, "network": {"kind": "allowlist", "hosts": ["api.example.com", "*.example.org", "10.0.0.1", "::1"], "note": "open"}, "spec": {},
    "sandbox": "wasm", "mutating": true, "visibility": "public", "limits": {"fuel": 1000, "instance": "fresh", "memMB": 64, "cpuMs": 500}}],
  "guardrails": [{"id": "acme.ledger.response-not-empty", "checkId": "acme.ledger.checks.response-not-empty",
    "kind": "zero-llm", "action": {"on-violation": "halt"}, "checkModulePath": "guardrails/response.wasm",
    "configSchema": {"type": "object"}, "config": {}, "name": "Not empty", "severity": "error",
    "scope": {"when": "runtime-only"}, "sandbox": "wasm", "network": {"kind": "none"}, "limits": {"fuel": 5}}],
  "agents": [{"id": "a", "version": "1", "name": "n", "instructions": "i", "capabilities": [], "tools": [], "modulePath": "a.wasm"}],
  "flows": [{"id": "f", "version": "1", "nodes": [], "edges": [], "kernelPayloadVersion": 1, "modulePath": "f.wasm"}]
}`

// TestIndexSchemaAgreesWithTheReader: for the base index and every
// variant of it with one field removed or given a value of another JSON
// type (or an unknown key added), the index schema and packd's reader
// agree on whether the index is valid; so the schema in the repo is the
// format packd loads, and packd check's schema pass finds nothing the
// reader does not.
func TestIndexSchemaAgreesWithTheReader(t *testing.T) {
	values := []string{`""`, `"x"`, `0`, `1`, `1.5`, `-1`, `true`, `null`, `{}`, `[]`, `[{}]`, `["A_B"]`, `["KINDGI_X"]`, `{"on-violation":"halt"}`, `"fresh"`}
	base, err := ojson.Decode([]byte(baseIndex))
	if err != nil {
		t.Fatal(err)
	}
	if problems := readerSays(t, base); problems != "" {
		t.Fatalf("the base index: %s", problems)
	}
	var variants int
	var walk func(node any, set func(any), remove func())
	try := func(variant func()) {
		variants++
		variant()
	}
	walk = func(node any, set func(any), remove func()) {
		for _, v := range values {
			val, _ := ojson.Decode([]byte(v))
			try(func() { set(val); compare(t, base); set(node) })
		}
		if remove != nil {
			try(func() { remove(); compare(t, base); set(node) })
		}
		switch n := node.(type) {
		case *ojson.Object:
			keys := append([]string(nil), n.Keys...)
			for _, k := range keys {
				child, _ := n.Get(k)
				k := k
				walk(child, func(v any) { n.Set(k, v) }, func() { del(n, k) })
			}
			try(func() { n.Set("unknownKey", 1.0); compare(t, base); del(n, "unknownKey") })
		case []any:
			for i := range n {
				i := i
				walk(n[i], func(v any) { n[i] = v }, nil)
			}
		}
	}
	top := base.(*ojson.Object)
	for _, k := range append([]string(nil), top.Keys...) {
		child, _ := top.Get(k)
		walk(child, func(v any) { top.Set(k, v) }, func() { del(top, k) })
	}
	if variants < 500 {
		t.Fatalf("only %d variants", variants)
	}
}

// readerSays is what the reader says of an index ("" when nothing).
func readerSays(t *testing.T, doc any) string {
	t.Helper()
	return strings.Join(readIndex(ojson.Clone(doc), &Index{}), "; ")
}

func compare(t *testing.T, doc any) {
	t.Helper()
	reader := readerSays(t, doc)
	schema := strings.Join(schemaProblems(doc), "; ")
	if (reader == "") != (schema == "") {
		t.Errorf("%s\n  the reader says: %q\n  the schema says: %q", ojson.Encode(doc), reader, schema)
	}
}

// TestIndexSchemaProblemsNameTheField: a problem only the schema finds
// names the field as a path (tools[0].limits.fuel).
func TestIndexSchemaProblemsNameTheField(t *testing.T) {
	for ptr, want := range map[string]string{"": "Index", "/tools/0/limits/fuel": "tools[0].limits.fuel", "/env/required/1": "env.required[1]", "/a~1b": "a/b"} {
		if got := fieldPath(ptr); got != want {
			t.Errorf("fieldPath(%q) = %q, want %q", ptr, got, want)
		}
	}
}

// TestIndexSchemaIsTheDocumentedOne: the schema docs/index-format.md
// points to is the one packd embeds.
func TestIndexSchemaIsTheDocumentedOne(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "index-format.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "host/index.schema.json") {
		t.Fatal("docs/index-format.md does not name host/index.schema.json")
	}
	if _, err := indexSchema(); err != nil {
		t.Fatal(err)
	}
}

// del removes a key from an object.
func del(o *ojson.Object, k string) {
	for i, key := range o.Keys {
		if key == k {
			o.Keys = append(o.Keys[:i], o.Keys[i+1:]...)
			o.Vals = append(o.Vals[:i], o.Vals[i+1:]...)
			return
		}
	}
}
