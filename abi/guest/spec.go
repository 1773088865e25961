package guest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/kindgi/packd/abi/guest/wire"
)

// Option says something of a tool or check for its index entry, which
// `packd index` writes from what the module describes.
type Option func(*entry)

// entry is what the options say.
type entry struct {
	version, description, kind string
	input, output, config      json.RawMessage
	action                     json.RawMessage
}

// Version is the tool's version (e.g. "1.0.0").
func Version(v string) Option { return func(e *entry) { e.version = v } }

// Description is what the tool or check does, for people.
func Description(d string) Option { return func(e *entry) { e.description = d } }

// InputSchema is the tool's input JSON Schema, as JSON; it overrides the
// one TypedTool derives from the input type. It panics if it is not JSON.
func InputSchema(schema string) Option {
	b := mustJSON("InputSchema", schema)
	return func(e *entry) { e.input = b }
}

// OutputSchema is the tool's output JSON Schema, as JSON.
func OutputSchema(schema string) Option {
	b := mustJSON("OutputSchema", schema)
	return func(e *entry) { e.output = b }
}

// ConfigSchema is a check's config JSON Schema, as JSON.
func ConfigSchema(schema string) Option {
	b := mustJSON("ConfigSchema", schema)
	return func(e *entry) { e.config = b }
}

// Kind is a check's kind (default "zero-llm"); Action what the runtime
// does on a violation, as a JSON object (default {"on-violation":"halt"}).
func Kind(k string) Option { return func(e *entry) { e.kind = k } }

// Action is a check's action object, as JSON.
func Action(action string) Option {
	b := mustJSON("Action", action)
	return func(e *entry) { e.action = b }
}

func mustJSON(what, s string) json.RawMessage {
	if !json.Valid([]byte(s)) {
		panic(fmt.Sprintf("guest: %s is not JSON: %s", what, s))
	}
	return json.RawMessage(s)
}

func options(opts []Option) *entry {
	e := &entry{}
	for _, o := range opts {
		o(e)
	}
	return e
}

func (e *entry) toolSpec(id string) wire.ToolSpec {
	return wire.ToolSpec{ID: id, Version: e.version, Description: e.description, Input: e.input, Output: e.output}
}

func (e *entry) checkSpec(id string) wire.CheckSpec {
	s := wire.CheckSpec{ID: id, Kind: e.kind, Action: e.action, Description: e.description, ConfigSchema: e.config}
	if s.Kind == "" {
		s.Kind = "zero-llm"
	}
	if s.Action == nil {
		s.Action = json.RawMessage(`{"on-violation":"halt"}`)
	}
	return s
}

// SchemaOf is the JSON Schema TypedTool derives from a Go type, as
// encoding/json encodes it: a struct is an object whose properties are its
// exported fields by their JSON names, required unless `omitempty` (a
// field's `desc` tag becomes its description); strings, booleans, integers
// and floats are themselves; slices and arrays are arrays (a []byte a
// base64 string); maps with string keys objects; time.Time a date-time
// string; pointers their element; interfaces and json.RawMessage anything.
func SchemaOf(t reflect.Type) json.RawMessage {
	b, _ := json.Marshal(schemaOf(t, map[reflect.Type]bool{}))
	return b
}

type schema = map[string]any

func schemaOf(t reflect.Type, seen map[reflect.Type]bool) schema {
	if t == reflect.TypeFor[json.RawMessage]() {
		return schema{}
	}
	if t == reflect.TypeFor[time.Time]() {
		return schema{"type": "string", "format": "date-time"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem(), seen)
	case reflect.String:
		return schema{"type": "string"}
	case reflect.Bool:
		return schema{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return schema{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return schema{"type": "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return schema{"type": "string", "contentEncoding": "base64"}
		}
		return schema{"type": "array", "items": schemaOf(t.Elem(), seen)}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return schema{"type": "object"}
		}
		return schema{"type": "object", "additionalProperties": schemaOf(t.Elem(), seen)}
	case reflect.Struct:
		if seen[t] { // a recursive type: described once, open below
			return schema{"type": "object"}
		}
		seen[t] = true
		defer delete(seen, t)
		props, required := schema{}, []string{}
		structFields(t, seen, props, &required)
		s := schema{"type": "object", "properties": props}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	}
	return schema{}
}

// structFields adds t's fields as encoding/json sees them (embedded
// structs' fields promoted, `json:"-"` left out).
func structFields(t reflect.Type, seen map[reflect.Type]bool, props schema, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				structFields(ft, seen, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s := schemaOf(f.Type, seen)
		if d := f.Tag.Get("desc"); d != "" {
			s = maps(s, "description", d)
		}
		props[name] = s
		if !slices.Contains(strings.Split(opts, ","), "omitempty") && !slices.Contains(strings.Split(opts, ","), "omitzero") {
			*required = append(*required, name)
		}
	}
}

func maps(s schema, k string, v any) schema {
	out := schema{k: v}
	for key, val := range s {
		out[key] = val
	}
	return out
}
