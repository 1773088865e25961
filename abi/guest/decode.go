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
// inputAsIs reports whether r.Input is JSON that json.Marshal returns
// unchanged (see marshalsAsIs): an echo handler's output then needs no
// second look.
func decodeRequest(b []byte, r *request) (ok, inputAsIs bool) {
	p := parser{b: b}
	ok = p.object(func(key []byte) bool {
		switch string(key) {
		case "kind":
			return p.str(&r.Kind)
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
func (p *parser) skip() bool {
	end := scan(p.b, p.i, &p.space, &p.escaped)
	if end < 0 {
		return false
	}
	p.i = end
	return true
}

const maxDepth = 1000

// scan reads one JSON value from b at i and returns where it ends, or -1
// when it is not valid JSON (or nests deeper than maxDepth). It sets
// *space when it skips white space outside strings, and *escaped when a
// string holds a character json.Marshal escapes (<, >, &, U+2028,
// U+2029); bytes >= 0x80 are taken as they are, as encoding/json's
// validator takes them.
//
// It is one loop over the bytes with its own stack: in a Go guest every
// function call and every turn of a loop costs a trip through the
// function's dispatch loop, so a recursive reader with a call per value
// and per white-space check was most of a pooled echo of structured input
// (about 1,000 fuel a byte; this is a tenth of that).
func scan(b []byte, i int, space, escaped *bool) int {
	var objects [maxDepth/64 + 1]uint64 // bit d: the container at depth d is an object
	depth, n := 0, len(b)
	var c byte
value:
	for i < n && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
		*space = true
	}
	if i >= n {
		return -1
	}
	switch c = b[i]; {
	case c == '{':
		if depth >= maxDepth {
			return -1
		}
		objects[depth>>6] |= 1 << (depth & 63)
		depth++
		i++
		for i < n && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
			i++
			*space = true
		}
		if i < n && b[i] == '}' {
			i++
			depth--
			goto after
		}
		goto key
	case c == '[':
		if depth >= maxDepth {
			return -1
		}
		objects[depth>>6] &^= 1 << (depth & 63)
		depth++
		i++
		for i < n && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
			i++
			*space = true
		}
		if i < n && b[i] == ']' {
			i++
			depth--
			goto after
		}
		goto value
	case c == '"':
		if i = scanString(b, i, escaped); i < 0 {
			return -1
		}
		goto after
	case c == 't':
		if n-i < 4 || string(b[i:i+4]) != "true" {
			return -1
		}
		i += 4
		goto after
	case c == 'f':
		if n-i < 5 || string(b[i:i+5]) != "false" {
			return -1
		}
		i += 5
		goto after
	case c == 'n':
		if n-i < 4 || string(b[i:i+4]) != "null" {
			return -1
		}
		i += 4
		goto after
	case c == '-' || c >= '0' && c <= '9':
		if i = scanNumber(b, i); i < 0 {
			return -1
		}
		goto after
	}
	return -1
key:
	if i >= n || b[i] != '"' {
		return -1
	}
	if i = scanString(b, i, escaped); i < 0 {
		return -1
	}
	for i < n && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
		*space = true
	}
	if i >= n || b[i] != ':' {
		return -1
	}
	i++
	goto value
after:
	if depth == 0 {
		return i
	}
	for i < n && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
		*space = true
	}
	if i >= n {
		return -1
	}
	switch c, isObject := b[i], objects[(depth-1)>>6]&(1<<((depth-1)&63)) != 0; {
	case c == ',':
		i++
		if isObject {
			for i < n && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
				i++
				*space = true
			}
			goto key
		}
		goto value
	case c == '}' && isObject, c == ']' && !isObject:
		i++
		depth--
		goto after
	}
	return -1
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

// scanString reads the valid JSON string at b[i] (escapes checked; bytes
// >= 0x80 taken as they are, as encoding/json's validator does) and
// returns where it ends, or -1.
func scanString(b []byte, i int, escaped *bool) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	j := i + 1
	for {
		// A byte a step through a table for the first 16 (most strings
		// in structured input are shorter), then 8 a step.
		end := min(j+16, len(b))
		for j < end && stringPlain[b[j]] {
			j++
		}
		if j == end && j < len(b) {
			for len(b)-j >= 8 && plain8(b[j:]) {
				j += 8
			}
			continue
		}
		if j >= len(b) {
			return -1
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1
		case c < 0x20:
			return -1
		case c == '<' || c == '>' || c == '&':
			*escaped = true
		case c == 0xe2:
			if j+2 < len(b) && b[j+1] == 0x80 && (b[j+2] == 0xa8 || b[j+2] == 0xa9) {
				*escaped = true
			}
		case c == '\\':
			j++
			if j >= len(b) {
				return -1
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(b) {
					return -1
				}
				for _, h := range b[j+1 : j+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return -1
					}
				}
				j += 4
			default:
				return -1
			}
		}
		j++
	}
}

// stringPlain holds the bytes that need no look of their own inside a
// string (plain8's test, a byte at a time).
var stringPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' && c != 0xe2
	}
	return t
}()

// number reads a number as JSON's grammar has it.
func (p *parser) number() bool {
	end := scanNumber(p.b, p.i)
	if end < 0 {
		return false
	}
	p.i = end
	return true
}

// scanNumber reads the number at b[i] as JSON's grammar has it and returns
// where it ends, or -1.
func scanNumber(b []byte, i int) int {
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
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return -1
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
			return -1
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i
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
	// Written out: a loop over the six would not be unrolled.
	q, bs, lt, gt, amp, e2 := x^(ones*'"'), x^(ones*'\\'), x^(ones*'<'), x^(ones*'>'), x^(ones*'&'), x^(ones*0xe2)
	has := (x - ones*0x20) &^ x // bytes below 0x20
	has |= (q - ones) &^ q
	has |= (bs - ones) &^ bs
	has |= (lt - ones) &^ lt
	has |= (gt - ones) &^ gt
	has |= (amp - ones) &^ amp
	has |= (e2 - ones) &^ e2
	return has&highs == 0
}
