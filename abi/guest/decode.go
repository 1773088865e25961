package guest

import (
	"bytes"
	"encoding/json"
	"unsafe"

	"github.com/kindgi/packd/abi/guest/wire"
)

// A request and its ctx are decoded without reflection: encoding/json's
// reflective decoder was most of a pooled Go call (about 50 of its 65 µs
// for the echo pack, measured with `make bench`). The fast path takes
// only what it can decode exactly as encoding/json would; anything else
// (an escape or a non-ASCII byte in a string it must decode, a value of
// an unexpected type, invalid JSON) makes the caller fall back to
// encoding/json, so answers and error messages are the same either way.

// decodeRequest decodes the request envelope; false: use encoding/json.
// inputAsIs reports whether r.Input is JSON that json.Marshal returns
// unchanged (see marshalsAsIs): an echo handler's output then needs no
// second look.
//
// alias: strings may share b's bytes instead of copying them (see
// parser.alias).
func decodeRequest(b []byte, r *request, alias bool) (ok, inputAsIs bool) {
	p := parser{b: b, alias: alias}
	ok = p.object(func(key []byte) bool {
		switch string(key) {
		case "kind":
			return p.kind(&r.Kind)
		case "tool":
			return p.toolObject(&r.Tool.ID, &r.Tool.Version)
		case "check":
			return p.idObject(&r.Check.ID)
		case "input":
			p.space, p.escaped = false, false
			ok := p.raw(&r.Input)
			inputAsIs = ok && !p.space && !p.escaped
			return ok
		case "ctx":
			return p.raw(&r.Ctx)
		case "config":
			return p.raw(&r.Config)
		case "trace":
			return p.raw(&r.Trace)
		}
		return !folds(key, "kind", "tool", "check", "input", "ctx", "config", "trace") && p.skip()
	}) && p.end()
	return ok, ok && inputAsIs
}

// decodeContext decodes a call's ctx; false: use encoding/json.
func decodeContext(b []byte, c *Context, alias bool) bool {
	p := parser{b: b, alias: alias}
	return p.object(func(key []byte) bool {
		switch string(key) {
		case "tenantId":
			return p.str(&c.TenantID)
		case "runId":
			return p.str(&c.RunID)
		case "projectId":
			return p.str(&c.ProjectID)
		case "orgId":
			return p.str(&c.OrgID)
		case "requestId":
			return p.str(&c.RequestID)
		case "idempotencyKey":
			return p.str(&c.IdempotencyKey)
		case "env":
			if p.null() {
				c.Env = nil
				return true
			}
			if c.Env == nil {
				c.Env = map[string]string{}
			}
			return p.object(func(k []byte) bool {
				var v string
				if !p.str(&v) {
					return false
				}
				c.Env[string(k)] = v
				return true
			})
		case "secrets":
			return p.rawMap(&c.Secrets)
		case "settings":
			return p.rawMap(&c.Settings)
		}
		return !folds(key, "tenantId", "runId", "projectId", "orgId", "requestId", "idempotencyKey", "env", "secrets", "settings") && p.skip()
	}) && p.end()
}

// rawMap reads an object of JSON values into m (null: nil), as
// encoding/json decodes a map[string]json.RawMessage: into the map it has.
func (p *parser) rawMap(m *map[string]json.RawMessage) bool {
	if p.null() {
		*m = nil
		return true
	}
	if *m == nil {
		*m = map[string]json.RawMessage{}
	}
	return p.object(func(k []byte) bool {
		var v json.RawMessage
		if !p.raw(&v) {
			return false
		}
		(*m)[string(k)] = v
		return true
	})
}

// folds reports whether key matches one of names but for case, as
// encoding/json matches keys to fields.
func folds(key []byte, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// parser reads JSON from b at i. Its methods report false for anything it
// does not take (see above).
type parser struct {
	b     []byte
	i     int
	space bool // white space was skipped (outside strings)
	// escaped is set once a string held a character json.Marshal escapes
	// (<, >, &, U+2028, U+2029).
	escaped bool
	// alias has str answer strings that share b's bytes rather than
	// copies: a pooled call's request buffer (wasip1.go) is not written
	// again before the instance is reset, so they stay as read, and a
	// call allocates (and dirties heap pages for) none of them.
	alias bool
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
			p.space = true
		default:
			return
		}
	}
}

func (p *parser) end() bool {
	p.ws()
	return p.i == len(p.b)
}

// eat consumes c after white space.
func (p *parser) eat(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// object reads an object, calling member with each key (plain ASCII, no
// escapes) positioned at its value.
func (p *parser) object(member func(key []byte) bool) bool {
	if !p.eat('{') {
		return false
	}
	if p.eat('}') {
		return true
	}
	for {
		p.ws()
		key, ok := p.plain()
		if !ok || !p.eat(':') || !member(key) {
			return false
		}
		if p.eat(',') {
			continue
		}
		return p.eat('}')
	}
}

// plain reads a string of printable ASCII without escapes, and returns
// its contents.
func (p *parser) plain() ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return p.b[start:j], true
		case c < 0x20 || c >= 0x80 || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// str reads a plain string into s.
func (p *parser) str(s *string) bool {
	p.ws()
	v, ok := p.plain()
	switch {
	case !ok:
	case p.alias && len(v) > 0:
		*s = unsafe.String(&v[0], len(v))
	default:
		*s = string(v)
	}
	return ok
}

// kind reads a request's kind: the two the ABI has without a copy.
func (p *parser) kind(s *string) bool {
	p.ws()
	v, ok := p.plain()
	switch {
	case !ok:
	case string(v) == wire.KindInvoke:
		*s = wire.KindInvoke
	case string(v) == wire.KindCheckInvoke:
		*s = wire.KindCheckInvoke
	default:
		*s = string(v)
	}
	return ok
}

// null consumes a null.
func (p *parser) null() bool {
	p.ws()
	if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		return true
	}
	return false
}

// idObject reads {"id": "…", …} into id (other members are skipped).
func (p *parser) idObject(id *string) bool {
	return p.object(func(key []byte) bool {
		if string(key) == "id" {
			return p.str(id)
		}
		return !folds(key, "id") && p.skip()
	})
}

// toolObject reads a request's tool: its id and version.
func (p *parser) toolObject(id, version *string) bool {
	return p.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return p.str(id)
		case "version":
			return p.str(version)
		}
		return !folds(key, "id", "version") && p.skip()
	})
}

// raw reads any value into v, as its bytes (null too: encoding/json
// hands a json.RawMessage the literal).
func (p *parser) raw(v *json.RawMessage) bool {
	p.ws()
	start := p.i
	if !p.skip() {
		return false
	}
	*v = json.RawMessage(p.b[start:p.i])
	return true
}

// skip reads one value of any type, checking it is valid JSON. Deeper
// nesting than maxDepth is left to encoding/json (it refuses past 10000).
func (p *parser) skip() bool {
	end := scanValue(p.b, p.i, &p.space, &p.escaped)
	if end < 0 {
		return false
	}
	p.i = end
	return true
}

// string reads a valid JSON string.
func (p *parser) string() bool {
	end := scanString(p.b, p.i, &p.escaped)
	if end < 0 {
		return false
	}
	p.i = end
	return true
}

// number reads a number as JSON's grammar has it.
func (p *parser) number() bool {
	end := scanNumber(p.b, p.i)
	if end < 0 {
		return false
	}
	p.i = end
	return true
}
