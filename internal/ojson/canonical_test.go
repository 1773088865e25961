package ojson

import "testing"

func TestCanonical(t *testing.T) {
	v, err := Decode([]byte(`{"b":[3,1.0,{"z":null,"a":"x\u2028"}],"a":{},"c":[],"d":1e21}`))
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"a\": {},\n  \"b\": [\n    3,\n    1,\n    {\n      \"a\": \"x\u2028\",\n      \"z\": null\n    }\n  ],\n  \"c\": [],\n  \"d\": 1e+21\n}\n"
	if got := string(Canonical(v)); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	again, _ := Decode(Canonical(v))
	if string(Canonical(again)) != want {
		t.Fatal("canonical of canonical differs")
	}
}
