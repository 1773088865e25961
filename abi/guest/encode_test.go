package guest

import (
	"encoding/json"
	"math"
	"testing"
)

// checkEncode: what appendJSON makes of v, when it takes it, is
// json.Marshal's bytes.
func checkEncode(t *testing.T, v any) {
	t.Helper()
	got, ok := appendJSON(nil, v, 0)
	if !ok {
		return
	}
	want, err := json.Marshal(v)
	if err != nil || string(got) != string(want) {
		t.Fatalf("%#v: encoded %q, json.Marshal %q (%v)", v, got, want, err)
	}
}

var encodeCases = []any{
	nil, true, false, "", "plain", "q\"b\\s/<>&\b\f\n\r\t\x00\x1f\x7f", "é😀", "\u2028\u2029\u2027", "bad \xff utf8 \xc3", "\xed\xa0\x80",
	0.0, -0.0, 1.0, -1.5, 1e-6, 1e-7, 9.99e-7, 1e20, 1e21, 1.5e300, 5e-324, math.MaxFloat64, 123456789.125, 0.1,
	int(-3), int64(math.MaxInt64), int32(-7), uint64(math.MaxUint64), uint32(9),
	json.Number("12.5e3"), json.RawMessage(`{"a":[1,"x"]}`), json.RawMessage(`{ "spaced": 1 }`), json.RawMessage(`"<b>"`),
	[]any(nil), []any{}, []any{1.0, "a", nil, []any{true}}, []string{"x", "<"}, []string(nil),
	map[string]any(nil), map[string]any{}, map[string]any{"b": 1.0, "a": map[string]any{"z": nil, "y": []any{}}, "<k>": "v", "é": 2},
	map[string]string{"k": "v", "a": "&"}, map[string]string(nil),
}

func TestOutputsEncodeAsJSONMarshalDoes(t *testing.T) {
	for _, v := range encodeCases {
		checkEncode(t, v)
	}
	if _, ok := appendJSON(nil, map[string]any{"message": "hello", "n": 3.0, "tags": []any{"a"}}, 0); !ok {
		t.Fatal("an output of JSON's own values went to json.Marshal")
	}
	for _, v := range []any{math.NaN(), math.Inf(1), struct{ A int }{1}, map[string]any{"f": math.Inf(-1)}, json.Number("01"), &[]any{}} {
		if _, ok := appendJSON(nil, v, 0); ok {
			t.Errorf("%#v was encoded, want it left to json.Marshal", v)
		}
	}
}

// FuzzOutputsEncodeAsJSONMarshalDoes: any JSON document, decoded by
// encoding/json into JSON's own values, encodes to json.Marshal's bytes.
func FuzzOutputsEncodeAsJSONMarshalDoes(f *testing.F) {
	for _, c := range append(marshalCases, decodeCases...) {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if json.Unmarshal(b, &v) != nil {
			return
		}
		checkEncode(t, v)
		checkEncode(t, []any{v, string(b)})
	})
}
