package guest

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/kindgi/packd/abi/guest/wire"
)

// fieldsFor is what request_fields writes for the request b, found here
// as packd finds it (internal/sandbox/requestfields.go; its tests hold it
// to encoding/json); false where it answers -1.
func fieldsFor(b []byte, f *fields) bool {
	*f = fields{}
	return findFieldsIn(b, 0, wire.RequestObject, f)
}

func findFieldsIn(b []byte, base uint32, o *wire.FieldObject, f *fields) bool {
	var buf [maxMembers]member
	ms, ok := objectMembers(b, &buf)
	if !ok {
		return false
	}
	var seen uint64
	for _, m := range ms {
		k, refuse := o.Lookup(m.key(b))
		if m.flags&memberKeyPlain == 0 || refuse || k >= 0 && seen&(1<<k) != 0 {
			return false
		}
		if k < 0 {
			continue
		}
		seen |= 1 << k
		start, end := base+m.valueStart, base+m.valueEnd
		switch fi := o.Field[k]; {
		case fi < 0:
		case wire.StringFields&(1<<fi) == 0:
			f[fi] = field{start, end - start, m.flags}
		case m.flags&memberValuePlain != 0:
			f[fi] = field{start + 1, end - start - 2, m.flags}
		default:
			return false
		}
		if inner := o.Inner[k]; inner != nil && !findFieldsIn(m.value(b), start, inner, f) {
			return false
		}
	}
	return true
}

// TestFieldsReadAsEncodingJSON: a request and its ctx read from their
// fields are what encoding/json reads, and what the fast decoders read.
func TestFieldsReadAsEncodingJSON(t *testing.T) {
	reqs := []string{
		decodeCases[0], decodeCases[1],
		`{"kind":"invoke","tool":{"id":"a","version":"2"},"input":{"a": 1},"ctx":` + fullCtx + `}`,
		`{"kind":"invoke","tool":{"id":""},"input":"<","ctx":{"tenantId":"","env":null,"secrets":{}}}`,
		`{"kind":"check-invoke","check":{"id":"c"},"config":{},"trace":[]}`,
	}
	for _, s := range reqs {
		b := []byte(s)
		var f fields
		if !fieldsFor(b, &f) {
			t.Fatalf("%s: fields not found", b)
		}
		var slow request
		fast, inputAsIs := f.request(b)
		if err := json.Unmarshal(b, &slow); err != nil || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s: from fields %+v, encoding/json %+v (%v)", b, fast, slow, err)
		}
		if m, _ := json.Marshal(slow.Input); inputAsIs != (slow.Input != nil && string(m) == string(slow.Input)) {
			t.Fatalf("%s: inputAsIs %v", b, inputAsIs)
		}
		if slow.Ctx == nil {
			continue
		}
		fc, sc := Context{Raw: slow.Ctx}, Context{Raw: slow.Ctx}
		if !f.context(b, &fc) {
			t.Fatalf("%s: ctx not read from its fields", b)
		}
		if err := json.Unmarshal(slow.Ctx, &sc); err != nil || !reflect.DeepEqual(fc, sc) {
			t.Fatalf("%s: ctx from fields %+v, encoding/json %+v (%v)", b, fc, sc, err)
		}
	}
}

// TestACallReadFromItsFieldsAllocatesNothing: as
// TestACallsRequestAllocatesNothing, for a request read from its fields;
// its input has no room past its end, so a handler appending to it gets a
// copy and leaves the ctx after it as it was.
func TestACallReadFromItsFieldsAllocatesNothing(t *testing.T) {
	b := []byte(`{"kind":"invoke","tool":{"id":"x"},"input":{"a":1},"ctx":{"tenantId":"tenant-a","runId":"r"}}`)
	var f fields
	if !fieldsFor(b, &f) {
		t.Fatal("fields not found")
	}
	var r request
	var c Context
	allocs := testing.AllocsPerRun(100, func() {
		r, c = request{}, Context{}
		r, _ = f.request(b)
		if !f.context(b, &c) {
			t.Fatal("ctx not read from its fields")
		}
	})
	if allocs != 0 {
		t.Fatalf("reading the request from its fields allocates %v times, want 0", allocs)
	}
	_ = append(r.Input, `,"ctx":{"tenantId":"tenant-b"`...)
	if c.TenantID != "tenant-a" || cap(r.Input) != len(r.Input) || r.Tool.ID != "x" {
		t.Fatalf("after appending to the input: tenant %q, tool %q", c.TenantID, r.Tool.ID)
	}
}
