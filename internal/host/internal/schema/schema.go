// Package schema compiles the JSON Schemas (draft 2020-12) of a pack index and
// validates instances against them the way the existing pack services do with
// Ajv 8 (`allErrors: true`, `strict: true`, formats on, `useDefaults`).
//
// santhosh-tekuri/jsonschema/v6 compiles every schema (so an invalid schema or
// a remote $ref is a load error) and decides whether an instance is valid. The
// issues of an invalid instance are produced by this package's own walk over
// the schema as written, because Ajv's list (its order, its params, its
// messages) cannot be recovered from v6's error tree: see RATIONALE.md.
package schema

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/ojson"
)

// ErrRemoteRef is wrapped by the compile error of a schema that refers to
// anything outside itself.
var ErrRemoteRef = errors.New("schema: remote $ref is not allowed")

const rootURL = "mem://packd/schema.json"

type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%w: %s", ErrRemoteRef, url)
}

// Schema is a compiled schema. It is safe for concurrent use.
type Schema struct {
	doc      any // ordered, as written
	compiled *jsonschema.Schema
	anchors  map[string]anchored
	// Every pattern (pattern, patternProperties' keys) and format the
	// schema names, compiled once at Compile: bounded by the schema, and
	// gone with it (nil: does not compile).
	patterns map[string]*regexp.Regexp
	formats  map[string]*jsonschema.Schema
	fast     *fastSchema // nil: the schema has more than the fast path knows (fast.go)
}

type anchored struct {
	node any
	path string // schemaPath fragment of the node, e.g. "#/$defs/a"
}

// Compile compiles an ordered schema document (ojson value).
func Compile(doc any) (*Schema, error) {
	plain, err := jsonschema.UnmarshalJSON(bytes.NewReader(ojson.Encode(doc)))
	if err != nil {
		return nil, fmt.Errorf("reading schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(rootURL, plain); err != nil {
		return nil, fmt.Errorf("adding schema: %w", err)
	}
	compiled, err := c.Compile(rootURL)
	if err != nil {
		return nil, compileError(err)
	}
	s := &Schema{doc: doc, compiled: compiled, anchors: map[string]anchored{},
		patterns: map[string]*regexp.Regexp{}, formats: map[string]*jsonschema.Schema{}}
	s.index(doc, "#")
	s.fast = compileFast(doc, true)
	return s, nil
}

// compileError words why a schema does not compile for its author: what
// is wrong where, in the schema's own terms (JSON Pointers into it, never
// the internal URL it is compiled under).
func compileError(err error) error {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		var leaves []string
		var walk func(e *jsonschema.ValidationError)
		walk = func(e *jsonschema.ValidationError) {
			if len(e.Causes) == 0 {
				at := instancePointer(e.InstanceLocation)
				if at == "" {
					at = "the root"
				}
				leaves = append(leaves, "at "+at+": "+e.ErrorKind.LocalizedString(printer))
				return
			}
			for _, c := range e.Causes {
				walk(c)
			}
		}
		walk(ve)
		return fmt.Errorf("not a valid JSON Schema (draft 2020-12): %s", strings.Join(leaves, "; "))
	}
	return errors.New(strings.ReplaceAll(err.Error(), rootURL, ""))
}

// printer words v6's messages (some kinds, such as enum, need one: a nil
// printer panics).
var printer = message.NewPrinter(language.English)

// index collects what the walk looks up: $anchor and $dynamicAnchor names
// for "#name" refs, and every pattern and format, compiled.
func (s *Schema) index(node any, path string) {
	switch n := node.(type) {
	case *ojson.Object:
		for _, k := range []string{"$anchor", "$dynamicAnchor"} {
			if a, ok := n.Get(k); ok {
				if name, ok := a.(string); ok {
					s.anchors[name] = anchored{node: n, path: path}
				}
			}
		}
		if p, ok := n.Get("pattern"); ok {
			if p, ok := p.(string); ok {
				s.patterns[p] = compileRegexp(p)
			}
		}
		if pp, ok := n.Get("patternProperties"); ok {
			if pp, ok := pp.(*ojson.Object); ok {
				for _, p := range pp.Keys {
					s.patterns[p] = compileRegexp(p)
				}
			}
		}
		if f, ok := n.Get("format"); ok {
			if f, ok := f.(string); ok {
				s.formats[f] = compileFormat(f)
			}
		}
		for i, k := range n.Keys {
			if k == "enum" || k == "const" || k == "default" || k == "examples" {
				continue
			}
			s.index(n.Vals[i], path+"/"+escapeSchemaSeg(k))
		}
	case []any:
		for i, e := range n {
			s.index(e, fmt.Sprintf("%s/%d", path, i))
		}
	}
}

// Validate checks an ordered instance. It returns nil when the instance is
// valid, else the issues in Ajv's order (never empty): the first MaxIssues
// of them, and how many more there were.
func (s *Schema) Validate(data any) (issues []abi.Issue, more int) {
	if s.fast != nil && s.fast.valid(data) {
		return nil, 0
	}
	err := s.compiled.Validate(ojson.Plain(data))
	if err == nil {
		return nil, 0
	}
	w := walker{s: s}
	res := w.validate(s.doc, "#", data, "")
	if len(res.issues) > 0 {
		return res.issues, res.more
	}
	return fallbackIssues(err)
}

// fallbackIssues reports v6's own errors when the Ajv-shaped walk found none
// (the two validators disagree, e.g. on a format): never answer "invalid"
// with an empty list.
func fallbackIssues(err error) (out []abi.Issue, more int) {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []abi.Issue{{Keyword: "", Message: err.Error(), Params: &ojson.Object{}}}, 0
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		if len(out) >= MaxIssues {
			more++
			return
		}
		kw := e.ErrorKind.KeywordPath()
		keyword := ""
		if len(kw) > 0 {
			keyword = kw[len(kw)-1]
		}
		_, frag, _ := strings.Cut(e.SchemaURL, "#")
		sp := "#" + frag
		for _, seg := range kw {
			sp += "/" + escapeSchemaSeg(seg)
		}
		out = append(out, abi.Issue{
			InstancePath: instancePointer(e.InstanceLocation),
			SchemaPath:   sp,
			Keyword:      keyword,
			Params:       &ojson.Object{},
			Message:      e.ErrorKind.LocalizedString(printer),
		})
	}
	walk(ve)
	return out, more
}

func instancePointer(segs []string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(escapePointer(s))
	}
	return b.String()
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapePointer(s string) string { return pointerEscaper.Replace(s) }

// escapeSchemaSeg escapes a schema path segment as Ajv does: JSON Pointer
// escaping, then JavaScript's encodeURIComponent.
func escapeSchemaSeg(s string) string { return encodeURIComponent(escapePointer(s)) }

func encodeURIComponent(s string) string {
	const unreserved = "-_.!~*'()"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(unreserved, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// regexp is a pattern of the schema, compiled; nil when it does not
// compile (v6 then refused the schema, so the walk never asks).
func (s *Schema) regexp(p string) *regexp.Regexp {
	if re, ok := s.patterns[p]; ok {
		return re
	}
	return compileRegexp(p) // not named by the schema: not kept
}

func compileRegexp(p string) *regexp.Regexp {
	re, err := regexp.Compile(p)
	if err != nil {
		return nil
	}
	return re
}

// formatOK validates a string against a format with v6's format checkers.
// Unknown formats pass, as v6 and Ajv (outside strict mode) let them.
func (s *Schema) formatOK(format, value string) bool {
	sch, ok := s.formats[format]
	if !ok {
		sch = compileFormat(format) // not named by the schema: not kept
	}
	return sch == nil || sch.Validate(value) == nil
}

// compileFormat is a schema of the one format (which lets any string
// through when v6 does not know the format), or nil.
func compileFormat(format string) *jsonschema.Schema {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource("mem://packd/format.json", map[string]any{"format": format}); err != nil {
		return nil
	}
	sch, _ := c.Compile("mem://packd/format.json")
	return sch
}
