package host

// What every face tells a caller of the pack without running pack code:
// the pack (Info) and a tool's parameters (DescribeTool).

import (
	"strings"

	"github.com/kindgi/packd/internal/ojson"
)

// Info is the pack's description for a face (HTTP's /v1/info): the
// protocol, the pack's ids, versions and index hash, its tools (with their
// versions) and checks, and missingEnv, its required environment names
// that are not set.
func (p *Pack) Info(missingEnv []string) []byte {
	idx := p.index
	if missingEnv == nil {
		missingEnv = []string{}
	}
	tools := make([]any, 0, len(idx.Tools))
	for _, t := range idx.Tools {
		o := &ojson.Object{Keys: []string{"id"}, Vals: []any{t.ID}}
		if t.Version != "" {
			o.Set("version", t.Version)
		}
		tools = append(tools, o)
	}
	checks := make([]string, 0, len(idx.Guardrails))
	for _, g := range idx.Guardrails {
		checks = append(checks, g.InvokeID())
	}
	return ojson.Encode(&ojson.Object{
		Keys: []string{"protocol", "packId", "packVersion", "artifactVersion", "indexHash", "tools", "checks", "missingEnv"},
		Vals: []any{2.0, idx.PackID, idx.PackVersion, idx.ArtifactVersion, idx.Hash, tools, checks, missingEnv},
	})
}

// DescribeTool is the describe envelope of the runtime-dispatch design for
// a tool (the version named, or as Describe picks it), derived from its
// input schema: its verb, pack, description and parameters; false when
// the pack has no such tool. No gate, no pack code.
func (p *Pack) DescribeTool(id, version string) ([]byte, bool) {
	spec, ok := p.Describe(id, version)
	if !ok {
		return nil, false
	}
	params := []any{}
	schema, _ := spec.Input.(*ojson.Object)
	if schema != nil {
		required := map[string]bool{}
		if req, ok := schema.Get("required"); ok {
			if list, ok := req.([]any); ok {
				for _, r := range list {
					if name, ok := r.(string); ok {
						required[name] = true
					}
				}
			}
		}
		props, _ := schema.Get("properties")
		if po, ok := props.(*ojson.Object); ok {
			for i, name := range po.Keys {
				sub, _ := po.Vals[i].(*ojson.Object)
				params = append(params, &ojson.Object{
					Keys: []string{"name", "type", "required", "description"},
					Vals: []any{name, schemaType(sub), required[name], schemaString(sub, "description")},
				})
			}
		}
	}
	return ojson.Encode(&ojson.Object{
		Keys: []string{"verb", "pack", "description", "category", "params"},
		Vals: []any{spec.ID, p.index.PackID, spec.Description, "tool", params},
	}), true
}

// schemaType is a property's JSON Schema type as one string: "any" when
// the schema names none, alternatives joined with "|".
func schemaType(sub *ojson.Object) string {
	if sub == nil {
		return "any"
	}
	t, ok := sub.Get("type")
	if !ok {
		return "any"
	}
	switch tt := t.(type) {
	case string:
		return tt
	case []any:
		parts := make([]string, 0, len(tt))
		for _, x := range tt {
			if s, ok := x.(string); ok {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "|")
	}
	return "any"
}

func schemaString(sub *ojson.Object, key string) string {
	if sub == nil {
		return ""
	}
	v, _ := sub.Get(key)
	s, _ := v.(string)
	return s
}
