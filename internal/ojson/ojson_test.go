package ojson

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestFormatNumberLikeJavaScript(t *testing.T) {
	cases := map[float64]string{
		0: "0", 1: "1", -1.5: "-1.5", 100: "100", 1e21: "1e+21", 1.5e21: "1.5e+21",
		1e20: "100000000000000000000", 0.000001: "0.000001", 1e-7: "1e-7", 1.25e-10: "1.25e-10",
		math.Copysign(0, -1): "0", math.Inf(1): "null", 123456789.125: "123456789.125",
	}
	for f, want := range cases {
		if got := FormatNumber(f); got != want {
			t.Errorf("FormatNumber(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestRoundTripKeepsOrderAndEscapesLikeJSONStringify(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"b":1,"a":[true,false,null],"c":{"z":"x","y":1.50}}`, `{"b":1,"a":[true,false,null],"c":{"z":"x","y":1.5}}`},
		{` {"a" : 1 , "a" : 2, "b": 3} `, `{"a":2,"b":3}`},
		{`"<>&\u2028\u0001\t\"\\/"`, `"<>&` + "\u2028" + `\u0001\t\"\\/"`},
		{`1E2`, `100`},
		{`1e400`, `null`},
		{`[]`, `[]`},
		{`{}`, `{}`},
	}
	for _, c := range cases {
		v, err := Decode([]byte(c.in))
		if err != nil {
			t.Fatalf("Decode(%s): %v", c.in, err)
		}
		if got := string(Encode(v)); got != c.want {
			t.Errorf("Encode(Decode(%s)) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a":}`, `[1,]`, `{} {}`, `nul`, `{"a" 1}`, `{1:2}`} {
		if _, err := Decode([]byte(in)); !errors.Is(err, ErrSyntax) {
			t.Errorf("Decode(%q) error = %v, want ErrSyntax", in, err)
		}
	}
	deep := make([]byte, 0, 2*maxDepth+10)
	for i := 0; i < maxDepth+5; i++ {
		deep = append(deep, '[')
	}
	if _, err := Decode(deep); !errors.Is(err, ErrSyntax) {
		t.Errorf("over-deep nesting: %v", err)
	}
}

func TestInvalidUTF8BecomesReplacementCharacter(t *testing.T) {
	if got := string(AppendString(nil, "a\xffb")); got != "\"a\uFFFDb\"" {
		t.Errorf("got %q", got)
	}
}

func TestEqualIgnoresKeyOrder(t *testing.T) {
	a, _ := Decode([]byte(`{"a":1,"b":[1,{"c":2}]}`))
	b, _ := Decode([]byte(`{"b":[1,{"c":2}],"a":1}`))
	c, _ := Decode([]byte(`{"b":[1,{"c":3}],"a":1}`))
	if !Equal(a, b) || Equal(a, c) {
		t.Error("Equal is wrong")
	}
	clone := Clone(a).(*Object)
	clone.Set("a", 2.0)
	if v, _ := a.(*Object).Get("a"); v != 1.0 {
		t.Error("Clone shares state with the original")
	}
}

// FuzzDecode: any bytes either fail with ErrSyntax or decode to a value whose
// encoding decodes again to an equal value; Decode accepts exactly what
// encoding/json accepts (within the nesting bound).
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"x\u0000"`, `1e-7`, `[[[]]]`, `{"a":1,"a":2}`, `"\ud800\udc00\udc00"`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		if valid := json.Valid(data); (err == nil) != valid && !strings.Contains(fmt.Sprint(err), "nesting too deep") {
			t.Fatalf("Decode: %v, but json.Valid says %v", err, valid)
		}
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error does not wrap ErrSyntax: %v", err)
			}
			return
		}
		enc := Encode(v)
		w, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", enc, err)
		}
		if string(Encode(w)) != string(enc) {
			t.Fatalf("encoding is not stable: %s vs %s", enc, Encode(w))
		}
	})
}

// TestLoneSurrogatesAreKept: JSON.parse keeps a lone surrogate escape and
// JSON.stringify writes it back escaped; on main it became U+FFFD.
func TestLoneSurrogatesAreKept(t *testing.T) {
	cases := []struct{ in, want string }{
		{`"\ud800"`, `"\ud800"`},
		{`"\uDC00x\ud83d\ude00"`, `"\udc00x` + "\U0001F600" + `"`},
		{`"\ud800\u0041"`, `"\ud800A"`},
		{`"\ud800\ud800"`, `"\ud800\ud800"`},
		{`{"\udfff":1}`, `{"\udfff":1}`},
		{"\"\xed\xa0\x80\"", "\"\ufffd\ufffd\ufffd\""}, // raw bytes are not an escape
	}
	for _, c := range cases {
		v, err := Decode([]byte(c.in))
		if err != nil {
			t.Fatalf("Decode(%s): %v", c.in, err)
		}
		if got := string(Encode(v)); got != c.want {
			t.Errorf("Encode(Decode(%s)) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestManyKeys: an object of 100,000 keys decodes with JSON.parse's
// semantics (first position, last value); on main it took 27 s.
func TestManyKeys(t *testing.T) {
	var b []byte
	b = append(b, '{')
	for i := 0; i < 100_000; i++ {
		b = append(b, fmt.Sprintf(`"k%d":%d,`, i, i)...)
	}
	b = append(b, `"k5":"last"}`...)
	v, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	o := v.(*Object)
	if o.Len() != 100_000 || o.Keys[5] != "k5" || o.Vals[5] != "last" {
		t.Fatalf("len %d, key 5 %q = %v", o.Len(), o.Keys[5], o.Vals[5])
	}
	if x, ok := o.Get("k99999"); !ok || x != float64(99999) {
		t.Fatalf("Get k99999 = %v %v", x, ok)
	}
}

// Decoding an object of n keys takes time linear in n:
//
//	go test -run '^$' -bench DecodeKeys ./internal/ojson
func BenchmarkDecodeKeys(b *testing.B) {
	for _, n := range []int{1000, 10_000, 100_000} {
		var doc []byte
		doc = append(doc, '{')
		for i := 0; i < n; i++ {
			if i > 0 {
				doc = append(doc, ',')
			}
			doc = append(doc, fmt.Sprintf(`"key%d":%d`, i, i)...)
		}
		doc = append(doc, '}')
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if _, err := Decode(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestErrorsSayWhere(t *testing.T) {
	_, err := Decode([]byte("{\n  \"a\": tru\n}"))
	if err == nil || !strings.Contains(err.Error(), "at line 2, column 8") {
		t.Fatalf("got %v", err)
	}
}

// Decoders are pooled and a short document's strings share one copy of it:
// nothing a decode returns may change when the caller reuses its buffer or
// when other documents, short or long, are decoded after it or beside it.
func TestDecodedValuesOutliveTheBufferAndLaterDecodes(t *testing.T) {
	long := `{"big":[` + strings.Repeat(`{"k":"v\u00e9","n":[1,2,{"x":"y"}]},`, 400) + `"end"],"s":"tail"}`
	docs := []string{
		`{"v":2,"kind":"invoke","tool":{"id":"echo.message"},"input":{"message":"hello"},"ctx":{"tenantId":"t","runId":"r"}}`,
		`["a","b\n",{"c":[true,null,-1.5e3]},"\ud83d\ude00"]`,
		long,
		`{"10":"ten","2":"two","x":{"y":{"z":"deep"}}}`,
	}
	type kept struct {
		buf  []byte
		v    any
		want string
	}
	var all []kept
	for round := 0; round < 3; round++ {
		for _, doc := range docs {
			buf := []byte(doc)
			v, err := Decode(buf)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, kept{buf, v, string(Encode(v))})
			for i := range buf { // the caller reuses its buffer
				buf[i] = 'X'
			}
		}
	}
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 200; i++ {
				if _, err := Decode([]byte(docs[(g+i)%len(docs)])); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	for i, k := range all {
		if got := string(Encode(k.v)); got != k.want {
			t.Fatalf("value %d changed after later decodes:\n got %.200s\nwant %.200s", i, got, k.want)
		}
	}
}

// A call's message, decoded: one allocation per object of up to two keys,
// three for a larger one, one per string or number value (boxed), and one
// copy of the document for all of its strings.
func TestDecodingACallAllocatesLittle(t *testing.T) {
	msg := []byte(`{"v":2,"kind":"invoke","tool":{"id":"echo.message"},"input":{"message":"hello"},"ctx":{"tenantId":"t","runId":"r"}}`)
	if _, err := Decode(msg); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := Decode(msg); err != nil {
			t.Fatal(err)
		}
	})
	// 3 small objects, 3 for the top one, 6 values, 1 copy (before, each
	// string was a copy of its own and every decode grew its stacks: 31).
	want := 13.0
	if raceBuild {
		want += 5 // a quarter of the decoder and its stacks' 2 x 9 growths
	}
	if allocs > want {
		t.Fatalf("decoding a call's message allocates %.1f times; want at most %.0f", allocs, want)
	}
}

// TestSyntaxErrorSaysWhereAndWraps: a decoding error is a *SyntaxError
// with its line and column, wrapping ErrSyntax; its Detail is the text
// packd's messages show, without the package's words.
func TestSyntaxErrorSaysWhereAndWraps(t *testing.T) {
	_, err := Decode([]byte("{\n  \"a\": tru"))
	var se *SyntaxError
	if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) || se.Line != 2 || se.Column != 8 {
		t.Fatalf("%#v %v", se, err)
	}
	if !strings.HasSuffix(se.Detail(), " at line 2, column 8") || strings.HasPrefix(se.Detail(), "ojson") {
		t.Errorf("detail %q", se.Detail())
	}
	if err.Error() != "ojson: invalid JSON: "+se.Detail() {
		t.Errorf("error %q", err.Error())
	}
}
