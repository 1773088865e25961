package guest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
)

// A request and its ctx are decoded without reflection: encoding/json's
// reflective decoder was most of a pooled Go call (about 50 of its 65 µs
// for the echo pack, measured with `make bench`). The fast path takes
// only what it can decode exactly as encoding/json would; anything else
// (an escape or a non-ASCII byte in a string it must decode, a value of
// an unexpected type, invalid JSON) makes the caller fall back to
// encoding/json, so answers and error messages are the same either way.

// decodeRequest decodes the request envelope; false: use encoding/json.
func decodeRequest(b []byte, r *request) bool {
	p := parser{b: b}
	return p.object(func(key []byte) bool {
		switch string(key) {
		case "kind":
			return p.str(&r.Kind)
		case "tool":
			return p.toolObject(&r.Tool.ID, &r.Tool.Version)
		case "check":
			return p.idObject(&r.Check.ID)
		case "input":
			return p.raw(&r.Input)
		case "ctx":
			return p.raw(&r.Ctx)
		case "config":
			return p.raw(&r.Config)
		case "trace":
			return p.raw(&r.Trace)
		}
		return !folds(key, "kind", "tool", "check", "input", "ctx", "config", "trace") && p.skip()
	}) && p.end()
}

// decodeContext decodes a call's ctx; false: use encoding/json.
func decodeContext(b []byte, c *Context) bool {
	p := parser{b: b}
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
	if ok {
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
func (p *parser) skip() bool { return p.value(0) }

const maxDepth = 1000

func (p *parser) value(depth int) bool {
	p.ws()
	if p.i >= len(p.b) || depth > maxDepth {
		return false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		if p.eat('}') {
			return true
		}
		for {
			p.ws()
			if !p.string() || !p.eat(':') || !p.value(depth+1) {
				return false
			}
			if p.eat(',') {
				continue
			}
			return p.eat('}')
		}
	case c == '[':
		p.i++
		if p.eat(']') {
			return true
		}
		for {
			if !p.value(depth + 1) {
				return false
			}
			if p.eat(',') {
				continue
			}
			return p.eat(']')
		}
	case c == '"':
		return p.string()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return false
}

func (p *parser) literal(lit string) bool {
	if len(p.b)-p.i >= len(lit) && string(p.b[p.i:p.i+len(lit)]) == lit {
		p.i += len(lit)
		return true
	}
	return false
}

// string reads a valid JSON string (escapes checked; bytes >= 0x80 taken
// as they are, as encoding/json's validator does).
func (p *parser) string() bool {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return false
	}
	for j := p.i + 1; j < len(p.b); j++ {
		for len(p.b)-j >= 8 && plain8(p.b[j:]) { // the common bytes, 8 a step
			j += 8
		}
		if j >= len(p.b) {
			break
		}
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '<' || c == '>' || c == '&':
			p.escaped = true
		case c == 0xe2 && j+2 < len(p.b) && p.b[j+1] == 0x80 && (p.b[j+2] == 0xa8 || p.b[j+2] == 0xa9):
			p.escaped = true
		case c == '\\':
			j++
			if j >= len(p.b) {
				return false
			}
			switch p.b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(p.b) {
					return false
				}
				for _, h := range p.b[j+1 : j+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				j += 4
			default:
				return false
			}
		}
	}
	return false
}

// number reads a number as JSON's grammar has it.
func (p *parser) number() bool {
	b, i := p.b, p.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	p.i = i
	return true
}

// marshalsAsIs reports whether json.Marshal would return b (a handler's
// json.RawMessage output) unchanged: valid, without white space outside
// strings (Marshal compacts), and without the characters Marshal escapes
// (<, >, &, U+2028, U+2029).
func marshalsAsIs(b []byte) bool {
	p := parser{b: b}
	return p.skip() && p.i == len(b) && !p.space && !p.escaped
}

// plain8 reports whether none of the first 8 bytes of b needs a look of
// its own inside a string: no '"' or '\\', none below 0x20, none that
// json.Marshal escapes ('<', '>', '&', and 0xE2, the first byte of U+2028
// and U+2029). One 8-byte load and a few word operations (each test has no
// false negatives; a false positive only sends the bytes to the byte
// loop): in a Go guest every turn of a loop is a jump through its
// function's dispatch loop, so a string's bytes are read 8 a turn.
func plain8(b []byte) bool {
	x := binary.LittleEndian.Uint64(b)
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	has := (x - ones*0x20) &^ x // bytes below 0x20
	for _, c := range [...]uint64{'"', '\\', '<', '>', '&', 0xe2} {
		y := x ^ (ones * c)
		has |= (y - ones) &^ y
	}
	return has&highs == 0
}
