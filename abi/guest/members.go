package guest

// An object's members, as kindgi.json_members finds them (wasip1.go):
// packd walks a request's envelope and its ctx natively, and the decoders
// (decode.go) look only at the keys. Walked here, a byte at a time through
// each function's dispatch loop, they were most of a pooled echo call
// (29,000 of its 35,000 units of fuel). Outside WebAssembly (go test),
// membersIn walks them itself, as packd does.

// member is where one member of an object lies in it, as json_members
// writes it: five u32, little-endian as the guest's memory is.
type member struct {
	keyStart, keyEnd     uint32 // inside the key's quotes
	valueStart, valueEnd uint32
	flags                uint32
}

// A member's flags.
const (
	memberKeyPlain     = 1 << 0 // the key's bytes are 0x20-0x7f, no backslash: it says what it is
	memberValuePlain   = 1 << 1 // the value is a string whose bytes are
	memberValueSpace   = 1 << 2 // the value holds white space outside strings
	memberValueEscaped = 1 << 3 // a string in the value holds what json.Marshal escapes
)

// maxMembers is the members a decoder takes in an array on its stack; an
// object with more has them in a slice of their own.
const maxMembers = 16

func (m member) key(b []byte) []byte { return b[m.keyStart:m.keyEnd] }

// value is the member's value, without room past its end: a handler that
// appends to its input gets a copy, and never writes over the bytes after
// it (the ctx, whose strings share them).
func (m member) value(b []byte) []byte { return b[m.valueStart:m.valueEnd:m.valueEnd] }

// objectMembers reads the object that is all of b (white space around it
// allowed) and returns its members; false when b is not one valid object.
func objectMembers(b []byte, buf *[maxMembers]member) ([]member, bool) {
	n, end := membersIn(b, buf[:])
	if n < 0 || !onlySpace(b[end:]) {
		return nil, false
	}
	if n <= len(buf) {
		return buf[:n], true
	}
	ms := make([]member, n)
	if again, _ := membersIn(b, ms); again != n {
		return nil, false
	}
	return ms, true
}

func onlySpace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// walkMembers reads the object at the start of b (white space before it
// allowed), writing its first len(out) members to out, and returns how
// many it has and where it ends; -1 when b does not start with one valid
// object nested at most maxDepth deep. It is what json_members answers.
func walkMembers(b []byte, out []member) (count, end int) {
	p := parser{b: b}
	if !p.eat('{') {
		return -1, 0
	}
	if p.eat('}') {
		return 0, p.i
	}
	for {
		p.ws()
		var keyEscaped bool
		ks := p.i
		ke := scanString(b, ks, &keyEscaped)
		if ke < 0 {
			return -1, 0
		}
		p.i = ke
		if !p.eat(':') {
			return -1, 0
		}
		p.ws()
		vs := p.i
		var space, escaped bool
		ve := scan(b, vs, &space, &escaped)
		if ve < 0 {
			return -1, 0
		}
		var flags uint32
		if printable(b[ks+1 : ke-1]) {
			flags |= memberKeyPlain
		}
		if b[vs] == '"' && printable(b[vs+1:ve-1]) {
			flags |= memberValuePlain
		}
		if space {
			flags |= memberValueSpace
		}
		if escaped {
			flags |= memberValueEscaped
		}
		if count < len(out) {
			out[count] = member{uint32(ks + 1), uint32(ke - 1), uint32(vs), uint32(ve), flags}
		}
		count++
		p.i = ve
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			return count, p.i
		}
		return -1, 0
	}
}

// printable reports whether a string's contents (between its quotes) are
// bytes 0x20-0x7f without a backslash: what it says is its bytes.
func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}
