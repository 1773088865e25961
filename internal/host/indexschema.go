package host

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"

	"github.com/kindgi/packd/internal/host/internal/schema"
	"github.com/kindgi/packd/internal/ojson"
)

// IndexSchema is the JSON Schema of a pack index (docs/index-format.md
// describes every field). Every index packd loads is checked against it.
//
//go:embed index.schema.json
var IndexSchema []byte

var indexSchema = sync.OnceValues(func() (*schema.Schema, error) {
	doc, err := ojson.Decode(IndexSchema)
	if err != nil {
		return nil, err
	}
	return schema.Compile(doc)
})

// schemaProblems checks a decoded index against IndexSchema: one problem
// per issue, at the field it is about (tools[0].limits.fuel).
func schemaProblems(doc any) []string {
	s, err := indexSchema()
	if err != nil {
		return []string{"the index schema does not compile: " + err.Error()} // a packd bug: its tests compile it
	}
	var problems []string
	issues, more := s.Validate(doc)
	for _, is := range issues {
		problems = append(problems, fmt.Sprintf("%s: %s (index schema: %s)", fieldPath(is.InstancePath), is.Message, is.SchemaPath))
	}
	if more > 0 {
		problems = append(problems, fmt.Sprintf("Index: %d more problems not listed", more))
	}
	return problems
}

// fieldPath writes a JSON Pointer into the index as a field path:
// /tools/0/limits/fuel is tools[0].limits.fuel, "" is Index.
func fieldPath(ptr string) string {
	if ptr == "" {
		return "Index"
	}
	var b strings.Builder
	for _, seg := range strings.Split(ptr[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		if seg != "" && strings.Trim(seg, "0123456789") == "" {
			b.WriteString("[" + seg + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}
