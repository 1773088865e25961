package server

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kindgi/packd/internal/ojson"
)

// describe answers GET /v1/tools/{id}[?version=V] with the describe envelope
// of the runtime-dispatch design, derived from the tool's input schema. No
// gate, no pack code, no audit row.
func (s *Server) describe(c echo.Context) error {
	id := c.Param("id")
	p := s.gen.Load().pack // its index only: no reference needed
	spec, ok := p.Describe(id, c.QueryParam("version"))
	if !ok {
		return sendError(c, http.StatusNotFound, "No tool "+id)
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
	return send(c, http.StatusOK, ojson.Encode(&ojson.Object{
		Keys: []string{"verb", "pack", "description", "category", "params"},
		Vals: []any{spec.ID, p.Index().PackID, spec.Description, "tool", params},
	}))
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
