package sandbox

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// membersByEncodingJSON is what json_members answers, as encoding/json
// reads the text: -1 when it does not start with one valid object; else
// its members and where it ends.
func membersByEncodingJSON(b []byte) (members [][5]uint32, end int) {
	if e, _, _ := scanByEncodingJSON(b); e < 0 || bytes.TrimLeft(b, " \t\r\n")[0] != '{' {
		return nil, -1
	}
	d := json.NewDecoder(bytes.NewReader(b))
	_, _ = d.Token() // {
	for d.More() {
		before := int(d.InputOffset()) // past '{' or the last value
		_, _ = d.Token()
		keyStart := before + bytes.IndexByte(b[before:], '"')
		keyEnd := int(d.InputOffset()) - 1 // the key's closing quote
		var raw json.RawMessage
		_ = d.Decode(&raw)
		valueEnd := int(d.InputOffset())
		valueStart := valueEnd - len(raw)
		_, space, escaped := scanByEncodingJSON(raw)
		var flags uint32
		if printable(b[keyStart+1 : keyEnd]) {
			flags |= memberKeyPlain
		}
		if raw[0] == '"' && printable(raw[1:len(raw)-1]) {
			flags |= memberValuePlain
		}
		if space {
			flags |= memberValueSpace
		}
		if escaped {
			flags |= memberValueEscaped
		}
		members = append(members, [5]uint32{uint32(keyStart + 1), uint32(keyEnd), uint32(valueStart), uint32(valueEnd), flags})
	}
	_, _ = d.Token() // }
	return members, int(d.InputOffset())
}

func checkMembers(t *testing.T, b []byte) {
	t.Helper()
	if bytes.Count(b, []byte("[")) >= maxJSONDepth || bytes.Count(b, []byte("{")) >= maxJSONDepth {
		return // encoding/json nests to 10000
	}
	want, wantEnd := membersByEncodingJSON(b)
	for _, first := range []int{1, 3, firstScanChunk} {
		s := &jsonScanner{b: b, next: first}
		paid := 0
		s.pay = func(n int) {
			if n <= 0 || paid+n > len(b) {
				t.Fatalf("%q: pays %d after %d", b, n, paid)
			}
			paid += n
			s.next = first
		}
		var got [][5]uint32
		n, end := s.members(func(k int, m [5]uint32) {
			if k != len(got) {
				t.Fatalf("%q: member %d handed as %d", b, len(got), k)
			}
			got = append(got, m)
		})
		if wantEnd < 0 {
			if n != -1 {
				t.Fatalf("%q: json_members %d members, encoding/json refuses it", b, n)
			}
			continue
		}
		if n != len(want) || end != wantEnd || !equalMembers(got, want) || end > paid {
			t.Fatalf("%q (chunks from %d): json_members %v ending at %d (paid %d), encoding/json %v ending at %d", b, first, got, end, paid, want, wantEnd)
		}
	}
}

func equalMembers(a, b [][5]uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var jsonMembersCases = []string{
	`{}`, ` { } `, `{"a":1}`, `{"kind":"invoke","tool":{"id":"echo.echo"},"input":{"message":"hello"},"ctx":{"tenantId":"t","runId":"r"}}`,
	` { "a" : [1, 2] , "b" : "x" } tail`, `{"a":1,"a":2}`, `{"t\"q":"v\\w","é":"é","<":"<b>","\u0041":"\u0041"}`,
	`{"a":"` + "\x7f" + `","b":"\u2028"}`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{1:2}`, `{"a":1 "b":2}`, `[1]`, `"a"`, ``, `{`, `{"a":1`,
	`{"a":{"b":{"c":[1,{"d":" e f "}]}}}`, `{"":0}`, `{"a":null,"b":true,"c":false,"d":-1.5e3}`,
}

func TestJSONMembersReadsAsEncodingJSON(t *testing.T) {
	for _, c := range jsonMembersCases {
		checkMembers(t, []byte(c))
	}
	eachRandomText(rand.New(rand.NewPCG(46, 2)), func(b []byte) { checkMembers(t, b) })
}

// TestJSONMembersRefusesDeeperThanItsLimit: a member's value nests as a
// value json_scan reads may.
func TestJSONMembersRefusesDeeperThanItsLimit(t *testing.T) {
	deep := func(n int) []byte {
		return []byte(`{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`)
	}
	count := func(b []byte) int {
		s := &jsonScanner{b: b, next: firstScanChunk, pay: func(int) {}}
		n, _ := s.members(func(int, [5]uint32) {})
		return n
	}
	if n := count(deep(maxJSONDepth)); n != 1 {
		t.Fatalf("a value %d deep: %d members, want 1", maxJSONDepth, n)
	}
	if n := count(deep(maxJSONDepth + 1)); n != -1 {
		t.Fatalf("a value %d deep: %d members, want -1", maxJSONDepth+1, n)
	}
}

// FuzzJSONMembers: whatever the bytes, json_members answers as
// encoding/json reads them.
func FuzzJSONMembers(f *testing.F) {
	for _, c := range jsonMembersCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkMembers(t, b) })
}
