package sandbox

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// jsonScanCases are texts json_scan must read as encoding/json does.
var jsonScanCases = []string{
	`{"items":[{"id":1,"name":"item 1","tags":["a","b"],"ok":true,"score":0.25},{"id":2,"n":null,"o":{},"l":[],"f":false,"e":-1.5e-3}]},"ctx":{}}`,
	`[[[[[[]]]]]]`, `{"a":{"b":{"c":[1,[2,{"d":"e"}]]}}}`, `{"a":1,}`, `[1,]`, `{"a"}`, `{"a":}`, `{1:2}`, `[}`, `{]`, `{"a":1]`, `[1}`, `]`, `}`,
	`{"a" : 1}`, "[1,\n2]", `{"a":[1,2],"b":"x"} `, `"abc`, `tru`, `falsee`, `nulll`, `-`, `01`, `1.e5`, `[1 2]`, `{"a":1 "b":2}`,
	`{"message":"hello world"}`, `{"a": 1}`, `[1,2,{"b":null}]`, `"<b>"`, `"a&b"`, "\"\u2028\"", "\"\u2029x\"", "\"\xe2\x80\"", `{"a":"é"}`, ` 1`, `1 `, `{"a":1`, ``, `nul`, `"\u003c"`, `0`,
	`-0.5e+7,`, `1E-2]`, `"\ud800"`, `"\x"`, `"\u12"`, `"\u12g4"`, `"\"\\\/\b\f\n\r\t"`, "\"a\x01\"", "\"\xff\xfe\"", " \t\r\n[ ]", `{ }`, `{"a":[ ]}`,
	`truex`, `[true,false,null]`, `-`, `-a`, `2.`, `2.x`, `2e`, `2e+`, `[1,2`, `{"a":"b"`, `{"a"`, `{"a":"b",`, `{"a":"b" , "c" : [ ] }`,
	strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth),
	`"` + strings.Repeat("abcdefgh<", 100) + `"`,
}

// scanByEncodingJSON is what json_scan answers, as encoding/json reads the
// text: -1 when its first value is not valid; else where it ends, and
// whether white space was found outside strings and a character
// json.Marshal escapes inside them.
func scanByEncodingJSON(b []byte) (end int, space, escaped bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	var raw json.RawMessage
	if err := d.Decode(&raw); err != nil {
		return -1, false, false
	}
	end = int(d.InputOffset())
	var compact bytes.Buffer
	_ = json.Compact(&compact, raw)
	space = compact.Len() != len(raw) || !bytes.HasPrefix(b, raw)
	escaped = bytes.ContainsAny(raw, "<>&") || bytes.Contains(raw, []byte("\u2028")) || bytes.Contains(raw, []byte("\u2029"))
	return end, space, escaped
}

// scanPaying runs the scanner over b with chunks of a few bytes (the first
// of first bytes), and checks that it pays for what it reads, within b.
func scanPaying(t *testing.T, b []byte, first int) (end int, s *jsonScanner) {
	t.Helper()
	s = &jsonScanner{b: b, next: first}
	paid := 0
	s.pay = func(n int) {
		if n <= 0 || n > hostChunk || paid+n > len(b) {
			t.Fatalf("%q: pays %d after %d", b, n, paid)
		}
		paid += n
		s.next = first // small chunks everywhere, to cut tokens at every place
	}
	end = s.value()
	if paid != s.lim || end > paid {
		t.Fatalf("%q: paid %d, limit %d, ended at %d", b, paid, s.lim, end)
	}
	return end, s
}

func checkScan(t *testing.T, b []byte) {
	t.Helper()
	want, space, escaped := scanByEncodingJSON(b)
	if bytes.Count(b, []byte("[")) > maxJSONDepth || bytes.Count(b, []byte("{")) > maxJSONDepth {
		return // encoding/json nests to 10000
	}
	for _, first := range []int{1, 2, 3, firstScanChunk} {
		end, s := scanPaying(t, b, first)
		if end != want || end >= 0 && (s.space != space || s.escaped != escaped) {
			t.Fatalf("%q (chunks from %d): json_scan %d (space %v, escaped %v), encoding/json %d (space %v, escaped %v)",
				b, first, end, s.space, s.escaped, want, space, escaped)
		}
	}
}

func TestJSONScanReadsAsEncodingJSON(t *testing.T) {
	for _, c := range jsonScanCases {
		checkScan(t, []byte(c))
		checkScan(t, []byte(c+`,"ctx":{"a":1}}`))
	}
	eachRandomText(rand.New(rand.NewPCG(43, 1)), func(b []byte) { checkScan(t, b) })
}

// eachRandomText hands check 3,000 random JSON values, each whole, cut
// short and with a byte changed.
func eachRandomText(r *rand.Rand, check func([]byte)) {
	for range 3000 {
		v := randomJSON(r, 0)
		check(v)
		if len(v) > 1 {
			check(v[:r.IntN(len(v))])
			w := bytes.Clone(v)
			const changes = "{}[],:\"\\ 0-.eEtfn<&\xe2"
			w[r.IntN(len(w))] = changes[r.IntN(len(changes))]
			check(w)
		}
	}
}

func TestJSONScanRefusesDeeperThanItsLimit(t *testing.T) {
	ok := strings.Repeat(`{"a":`, maxJSONDepth-1) + "[]" + strings.Repeat("}", maxJSONDepth-1)
	if end, _ := scanPaying(t, []byte(ok), firstScanChunk); end != len(ok) {
		t.Fatalf("%d deep: %d, want %d", maxJSONDepth, end, len(ok))
	}
	deep := "[" + ok + "]"
	if end, _ := scanPaying(t, []byte(deep), firstScanChunk); end != -1 {
		t.Fatalf("%d deep: %d, want -1", maxJSONDepth+1, end)
	}
}

// TestJSONScanPaysAsItReads: a long value is paid for in chunks of at most
// hostChunk, each before it is read (each payment may stop the guest, at
// its deadline), and what is paid for is at most the value and one chunk.
func TestJSONScanPaysAsItReads(t *testing.T) {
	for _, v := range [][]byte{
		[]byte(`"` + strings.Repeat("a", 1<<20) + `"`),
		[]byte("[" + strings.Repeat("1,", 1<<19) + "1]"),
		[]byte(strings.Repeat(" ", 1<<20) + "1"),
		[]byte("1" + strings.Repeat("0", 1<<20)),
	} {
		b := append(bytes.Clone(v), strings.Repeat(" x", 1<<20)...)
		s := &jsonScanner{b: b, next: firstScanChunk}
		var chunks []int
		s.pay = func(n int) { chunks = append(chunks, n) }
		if end := s.value(); end != len(v) {
			t.Fatalf("%.20q…: ended at %d, want %d", v, end, len(v))
		}
		paid := 0
		for _, c := range chunks {
			if c > hostChunk {
				t.Fatalf("%.20q…: a chunk of %d", v, c)
			}
			paid += c
		}
		if paid < len(v) || paid > len(v)+hostChunk {
			t.Fatalf("%.20q…: paid %d for %d bytes", v, paid, len(v))
		}
	}
	// A payment that stops the guest stops the scan.
	s := &jsonScanner{b: []byte(`"` + strings.Repeat("a", 1<<20) + `"`), next: firstScanChunk}
	calls := 0
	s.pay = func(int) {
		if calls++; calls == 3 {
			panic(ErrDeadline)
		}
	}
	func() {
		defer func() {
			if p := recover(); p != ErrDeadline {
				t.Fatalf("recovered %v, want the payment's panic", p)
			}
		}()
		s.value()
		t.Fatal("the scan went on after its payment stopped it")
	}()
}

// randomJSON writes a random JSON value, with white space, escapes and the
// characters json.Marshal escapes here and there.
func randomJSON(r *rand.Rand, depth int) []byte {
	ws := func() string { return []string{"", "", "", " ", "\n\t"}[r.IntN(5)] }
	switch k := r.IntN(10); {
	case k < 2 && depth < 6:
		var b []byte
		b = append(b, '[')
		for i := range r.IntN(5) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(append(b, ws()...), randomJSON(r, depth+1)...), ws()...)
		}
		return append(b, ']')
	case k < 4 && depth < 6:
		var b []byte
		b = append(b, '{')
		for i := range r.IntN(5) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(append(append(b, ws()...), randomString(r)...), ws()+":"+ws()...), randomJSON(r, depth+1)...)
		}
		return append(b, '}')
	case k < 6:
		return randomString(r)
	case k < 9:
		return []byte([]string{"0", "-1", "12.5", "-0.25e-7", "3E+2", "123456789012345678901234567890"}[r.IntN(6)])
	default:
		return []byte([]string{"true", "false", "null"}[r.IntN(3)])
	}
}

func randomString(r *rand.Rand) []byte {
	parts := []string{"a", "bc", "é", `\n`, `\"`, `\u00e9`, `\\`, "<", ">", "&", "\u2028", "\u2029", "\xe2\x80", "\xff", strings.Repeat("x", 20)}
	b := []byte{'"'}
	for range r.IntN(6) {
		b = append(b, parts[r.IntN(len(parts))]...)
	}
	return append(b, '"')
}

// FuzzJSONScan: whatever the bytes, json_scan answers as encoding/json reads them.
func FuzzJSONScan(f *testing.F) {
	for _, c := range jsonScanCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkScan(t, b) })
}
