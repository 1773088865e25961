package ojson

import (
	"fmt"
	"testing"
)

// TestArrayIndexKeysComeFirst: keys that are array indices are ordered as
// JavaScript orders them (first, in numeric order), when decoded and when
// set, so that every message packd writes lists them as JSON.stringify
// would, and validation walks them as Ajv does.
func TestArrayIndexKeysComeFirst(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"b":1,"10":2,"a":3,"2":4}`, `{"2":4,"10":2,"b":1,"a":3}`},
		{`{"02":1,"-1":2,"1.5":3,"4294967295":4,"4294967294":5,"0":6}`, `{"0":6,"4294967294":5,"02":1,"-1":2,"1.5":3,"4294967295":4}`},
		{`{"10":1,"10":2,"3":3}`, `{"3":3,"10":2}`},
		{`{"x":{"9":1,"y":2,"1":3}}`, `{"x":{"1":3,"9":1,"y":2}}`},
	} {
		v, err := Decode([]byte(c.in))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(Encode(v)); got != c.want {
			t.Errorf("%s: %s, want %s", c.in, got, c.want)
		}
	}
	o := &Object{}
	for _, k := range []string{"b", "10", "a", "2", "7", "c"} {
		o.Set(k, 1)
	}
	if got := string(Encode(o)); got != `{"2":1,"7":1,"10":1,"b":1,"a":1,"c":1}` {
		t.Errorf("set: %s", got)
	}
	if v, ok := o.Get("10"); !ok || v != 1 {
		t.Errorf("get after insert: %v %v", v, ok)
	}
}

// TestManyIndexKeys: an object of 200,000 array-index keys in descending
// order (each one before all the others) decodes in n log n: inserting
// each in order took quadratic time.
func TestManyIndexKeys(t *testing.T) {
	b := []byte{'{'}
	for i := 200_000; i > 0; i-- {
		b = append(b, fmt.Sprintf(`"%d":%d,`, i, i)...)
	}
	b = append(b, `"x":0}`...)
	v, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	o := v.(*Object)
	if o.Len() != 200_001 || o.Keys[0] != "1" || o.Keys[199_999] != "200000" || o.Keys[200_000] != "x" {
		t.Fatalf("len %d, first %q, last %q", o.Len(), o.Keys[0], o.Keys[o.Len()-1])
	}
}
