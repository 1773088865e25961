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
// `packd index` writes from what the module describes. What no option
// says, packd index keeps from the index it rewrites.
type Option func(*entry)

// entry is what the options say.
type entry struct {
	version, description, kind string
	guardrail, severity        string
	input, output, config      json.RawMessage
	action, limits, network    json.RawMessage
	effects, needs, needsSpec  json.RawMessage
	scope                      json.RawMessage
	mutating                   *bool
	sandbox, name              string
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

// ConfigSchema is a check's config JSON Schema, as JSON; it overrides the
// one TypedCheck derives from the config type.
func ConfigSchema(schema string) Option {
	b := mustJSON("ConfigSchema", schema)
	return func(e *entry) { e.config = b }
}

// Kind is a check's kind. When neither the module nor the index says,
// packd index writes "zero-llm".
func Kind(k string) Option { return func(e *entry) { e.kind = k } }

// Action is what the runtime does when a check fails, as a JSON object
// (e.g. {"on-violation":"log-only"}). When neither the module nor the
// index says, packd index writes {"on-violation":"halt"}.
func Action(action string) Option {
	b := mustJSON("Action", action)
	return func(e *entry) { e.action = b }
}

// Severity is a check's severity in its index entry (e.g. "error").
func Severity(s string) Option { return func(e *entry) { e.severity = s } }

// Guardrail is the id of a check's index entry when it is not the check
// id (the entry's checkId is then the check id).
func Guardrail(id string) Option { return func(e *entry) { e.guardrail = id } }

// Limits is the entry's limits object, as JSON: fuel, memMB, cpuMs,
// instance (docs/index-format.md, "limits").
func Limits(limits string) Option {
	b := mustJSON("Limits", limits)
	return func(e *entry) { e.limits = b }
}

// Network is the entry's network object, as JSON: the hosts the handler
// may reach (docs/index-format.md, "network"), e.g.
// {"kind":"allowlist","hosts":["api.example.com"]}.
func Network(network string) Option {
	b := mustJSON("Network", network)
	return func(e *entry) { e.network = b }
}

// Effects are the tool's declared side effects, as a JSON array in
// kindgi's shape (e.g. [{"kind":"writes","resource":"db:ledger"}]): data
// for the runtime's policies and audit.
func Effects(effects string) Option {
	b := mustJSON("Effects", effects)
	return func(e *entry) { e.effects = b }
}

// Mutating says whether the tool changes anything outside itself.
// Mutating(false) makes packd refuse the tool's writes: its outbound
// requests may only be GET, HEAD or OPTIONS (docs/index-format.md).
// Unsaid, a tool counts as mutating.
func Mutating(m bool) Option { return func(e *entry) { e.mutating = &m } }

// Needs are the named context slots the tool expects, as a JSON array
// (e.g. [{"name":"tenant"}]): data.
func Needs(needs string) Option {
	b := mustJSON("Needs", needs)
	return func(e *entry) { e.needs = b }
}

// NeedsSpec is what the tool needs of its call, as a JSON object in
// kindgi's shape: env and secrets map names to the JSON Schema of their
// string values (the caller resolves them into ctx env and secrets).
func NeedsSpec(needsSpec string) Option {
	b := mustJSON("NeedsSpec", needsSpec)
	return func(e *entry) { e.needsSpec = b }
}

// Sandbox is the isolation the tool or check asks for ("strict"): data.
func Sandbox(mode string) Option { return func(e *entry) { e.sandbox = mode } }

// Name is a check's guardrail's name, for people.
func Name(name string) Option { return func(e *entry) { e.name = name } }

// Scope is when a check's guardrail applies, as a JSON object (e.g.
// {"when":"always"}): data for the runtime.
func Scope(scope string) Option {
	b := mustJSON("Scope", scope)
	return func(e *entry) { e.scope = b }
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
	return wire.ToolSpec{ID: id, Version: e.version, Description: e.description, Input: e.input, Output: e.output,
		Limits: e.limits, Network: e.network, Effects: e.effects, Mutating: e.mutating, Needs: e.needs,
		NeedsSpec: e.needsSpec, Sandbox: e.sandbox}
}

func (e *entry) checkSpec(id string) wire.CheckSpec {
	return wire.CheckSpec{ID: id, Guardrail: e.guardrail, Kind: e.kind, Action: e.action, Severity: e.severity,
		Description: e.description, ConfigSchema: e.config, Limits: e.limits, Network: e.network,
		Name: e.name, Scope: e.scope, Sandbox: e.sandbox}
}

// Open, embedded in a struct, lets the object schema SchemaOf derives from
// it accept properties the struct does not name. Without it a derived
// object schema refuses them ("additionalProperties": false), so that a
// caller's misspelt field is an input-validation-failed, not a field
// silently left at its zero value:
//
//	type In struct {
//		guest.Open        // {"name":"Ada","extra":1} is accepted
//		Name string `json:"name"`
//	}
//
// Open has no fields: encoding/json neither writes nor reads it.
type Open struct{}

// SchemaOf is the JSON Schema TypedTool derives from a Go type, as
// encoding/json encodes it: a struct is an object whose properties are its
// exported fields by their JSON names, required unless `omitempty` (a
// field's `desc` tag becomes its description), and no other properties
// unless it embeds Open; strings, booleans, integers
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
		open := structFields(t, seen, props, &required)
		s := schema{"type": "object", "properties": props}
		if len(required) > 0 {
			s["required"] = required
		}
		if !open {
			s["additionalProperties"] = false
		}
		return s
	}
	return schema{}
}

// structFields adds t's fields as encoding/json sees them (embedded
// structs' fields promoted, `json:"-"` left out), and reports whether t or
// a struct embedded in it embeds Open.
func structFields(t reflect.Type, seen map[reflect.Type]bool, props schema, required *[]string) (open bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type == reflect.TypeFor[Open]() {
			open = true
			continue
		}
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
				open = structFields(ft, seen, props, required) || open
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
	return open
}

func maps(s schema, k string, v any) schema {
	out := schema{k: v}
	for key, val := range s {
		out[key] = val
	}
	return out
}
