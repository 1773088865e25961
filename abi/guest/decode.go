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
// alias: strings may share b's bytes instead of copying them: a pooled
// call's request buffer (wasip1.go) is not written again before the
// instance is reset, so they stay as read, and a call allocates (and
// dirties heap pages for) none of them.
func decodeRequest(b []byte, r *request, alias bool) (ok, inputAsIs bool) {
	var buf [maxMembers]member
	ms, ok := objectMembers(b, &buf)
	if !ok {
		return false, false
	}
	for _, m := range ms {
		key, v := m.key(b), m.value(b)
		switch {
		case m.flags&memberKeyPlain == 0:
			return false, false
		case string(key) == "kind":
			ok = m.kind(b, &r.Kind)
		case string(key) == "tool":
			ok = idObject(v, &r.Tool.ID, &r.Tool.Version, alias)
		case string(key) == "check":
			ok = idObject(v, &r.Check.ID, nil, alias)
		case string(key) == "input":
			r.Input = v
			inputAsIs = m.flags&(memberValueSpace|memberValueEscaped) == 0
		case string(key) == "ctx":
			r.Ctx = v
		case string(key) == "config":
			r.Config = v
		case string(key) == "trace":
			r.Trace = v
		default:
			ok = !folds(key, "kind", "tool", "check", "input", "ctx", "config", "trace")
		}
		if !ok {
			return false, false
		}
	}
	return true, inputAsIs
}

// decodeContext decodes a call's ctx; false: use encoding/json. alias: as
// decodeRequest's. Its loop is kept small, the rest in functions of their
// own: Go compiles a function to one loop around a br_table, and every
// jump in it pays for the blocks before the table, so a large function's
// every step is dear (this one's two members cost 5,400 fuel in one).
func decodeContext(b []byte, c *Context, alias bool) bool {
	var buf [maxMembers]member
	ms, ok := objectMembers(b, &buf)
	if !ok {
		return false
	}
	for _, m := range ms {
		if m.flags&memberKeyPlain == 0 {
			return false
		}
		key := m.key(b)
		if s := c.stringField(key); s != nil {
			ok = m.str(b, s, alias)
		} else {
			ok = c.otherField(key, m.value(b), alias)
		}
		if !ok {
			return false
		}
	}
	return true
}

// stringField is the string field a ctx key names, or nil.
func (c *Context) stringField(key []byte) *string {
	switch string(key) {
	case "tenantId":
		return &c.TenantID
	case "runId":
		return &c.RunID
	case "projectId":
		return &c.ProjectID
	case "orgId":
		return &c.OrgID
	case "requestId":
		return &c.RequestID
	case "idempotencyKey":
		return &c.IdempotencyKey
	}
	return nil
}

// rawValue reads a member's value of the object b as its bytes.
func rawValue(b []byte) func(e member) (json.RawMessage, bool) {
	return func(e member) (json.RawMessage, bool) { return e.value(b), true }
}

// otherField reads the ctx member key other than a string field: its env,
// secrets or settings, or one the struct does not name.
//
//go:noinline
func (c *Context) otherField(key, v []byte, alias bool) bool {
	switch string(key) {
	case "env":
		return c.env(v, alias)
	case "secrets":
		return c.secrets(v, alias)
	case "settings":
		return c.settings(v, alias)
	}
	return !folds(key, "tenantId", "runId", "projectId", "orgId", "requestId", "idempotencyKey", "env", "secrets", "settings")
}

// env, secrets and settings read the ctx member of that name, v.
func (c *Context) env(v []byte, alias bool) bool {
	return objectMap(v, &c.Env, alias, func(e member) (s string, ok bool) { return s, e.str(v, &s, alias) })
}

func (c *Context) secrets(v []byte, alias bool) bool {
	return objectMap(v, &c.Secrets, alias, rawValue(v))
}

func (c *Context) settings(v []byte, alias bool) bool {
	return objectMap(v, &c.Settings, alias, rawValue(v))
}

// idObject reads {"id": "…", "version": "…", …} into id and version (nil:
// a member like any other). Other members are skipped.
func idObject(b []byte, id, version *string, alias bool) bool {
	var buf [maxMembers]member
	ms, ok := objectMembers(b, &buf)
	if !ok {
		return false
	}
	for _, m := range ms {
		key := m.key(b)
		switch {
		case m.flags&memberKeyPlain == 0:
			return false
		case string(key) == "id":
			ok = m.str(b, id, alias)
		case string(key) == "version" && version != nil:
			ok = m.str(b, version, alias)
		case version != nil:
			ok = !folds(key, "id", "version")
		default:
			ok = !folds(key, "id")
		}
		if !ok {
			return false
		}
	}
	return true
}

// objectMap reads an object into m (null: nil), each member's value as
// value reads it (false: use encoding/json), as encoding/json decodes a
// map: into the map it has.
func objectMap[V any](b []byte, m *map[string]V, alias bool, value func(e member) (V, bool)) bool {
	if string(b) == "null" {
		*m = nil
		return true
	}
	var buf [maxMembers]member
	ms, ok := objectMembers(b, &buf)
	if !ok {
		return false
	}
	if *m == nil {
		*m = make(map[string]V, len(ms))
	}
	for _, e := range ms {
		if e.flags&memberKeyPlain == 0 {
			return false
		}
		v, ok := value(e)
		if !ok {
			return false
		}
		(*m)[text(e.key(b), alias)] = v
	}
	return true
}

// str reads the member's value, a plain string, into s.
func (m member) str(b []byte, s *string, alias bool) bool {
	if m.flags&memberValuePlain == 0 {
		return false
	}
	*s = text(b[m.valueStart+1:m.valueEnd-1], alias)
	return true
}

// kind reads a request's kind: the two the ABI has without a copy.
func (m member) kind(b []byte, s *string) bool {
	if m.flags&memberValuePlain == 0 {
		return false
	}
	switch v := b[m.valueStart+1 : m.valueEnd-1]; string(v) {
	case wire.KindInvoke:
		*s = wire.KindInvoke
	case wire.KindCheckInvoke:
		*s = wire.KindCheckInvoke
	default:
		*s = string(v)
	}
	return true
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

// text is b as a string: sharing its bytes when alias is set.
func text(b []byte, alias bool) string {
	if alias && len(b) > 0 {
		return unsafe.String(&b[0], len(b))
	}
	return string(b)
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

// eat consumes c after white space.
func (p *parser) eat(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
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

// number reads a number as JSON's grammar has it.
func (p *parser) number() bool {
	end := scanNumber(p.b, p.i)
	if end < 0 {
		return false
	}
	p.i = end
	return true
}
