package ojson

import (
	"errors"
	"math"
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
// encoding decodes again to an equal value.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"x\u0000"`, `1e-7`, `[[[]]]`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
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
