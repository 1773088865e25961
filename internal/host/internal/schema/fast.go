package schema

import (
	"math"
	"unicode/utf8"

	"github.com/kindgi/packd/internal/ojson"
)

// A fast path for the schemas most tools have: an object of typed
// properties, some required, perhaps no others, strings of bounded
// length. Validating through santhosh-tekuri/jsonschema takes a plain copy
// of the instance (maps for its objects) and a dozen allocations in the
// validator, on every call, for the input and the output: a tenth of a
// pooled call's time in packd. The fast path decides "valid" alone, and
// only where it is sure; anything it cannot decide, or finds invalid, goes
// to the full validation, which decides and words the issues. So it may
// never call valid an instance the full one refuses
// (TestFastPathNeverAcceptsWhatTheValidatorRefuses).

// fastSchema is a schema of the fast path's keywords only.
type fastSchema struct {
	types          uint8 // the JSON types allowed (typeBit); 0: any
	props          []fastProp
	propIndex      map[string]*fastSchema // props by name, when there are many
	required       []string
	noExtra        bool // additionalProperties: false
	minLen, maxLen int  // -1: none
}

type fastProp struct {
	name string
	s    *fastSchema
}

const (
	tNull uint8 = 1 << iota
	tBoolean
	tObject
	tArray
	tNumber
	tInteger
	tString
)

var typeBit = map[string]uint8{"null": tNull, "boolean": tBoolean, "object": tObject, "array": tArray, "number": tNumber, "integer": tInteger, "string": tString}

// annotations are the keywords that change nothing a validation decides.
var annotations = map[string]bool{"title": true, "description": true, "$comment": true, "examples": true, "default": true,
	"deprecated": true, "readOnly": true, "writeOnly": true}

// compileFast returns the fast path of a schema document, or nil when it
// uses any keyword the fast path does not know (or a form of one it does
// not take).
func compileFast(doc any, root bool) *fastSchema {
	n, ok := doc.(*ojson.Object)
	if !ok {
		return nil // a boolean schema, or not a schema
	}
	f := &fastSchema{minLen: -1, maxLen: -1}
	for i, k := range n.Keys {
		v := n.Vals[i]
		switch {
		case annotations[k]:
		case k == "$schema" && root:
		case k == "type":
			switch t := v.(type) {
			case string:
				if f.types = typeBit[t]; f.types == 0 {
					return nil
				}
			case []any:
				for _, e := range t {
					name, _ := e.(string)
					if typeBit[name] == 0 {
						return nil
					}
					f.types |= typeBit[name]
				}
				if f.types == 0 {
					return nil
				}
			default:
				return nil
			}
		case k == "properties":
			ps, ok := v.(*ojson.Object)
			if !ok {
				return nil
			}
			for j, name := range ps.Keys {
				p := compileFast(ps.Vals[j], false)
				if p == nil {
					return nil
				}
				f.props = append(f.props, fastProp{name, p})
			}
		case k == "required":
			names, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, e := range names {
				name, ok := e.(string)
				if !ok {
					return nil
				}
				f.required = append(f.required, name)
			}
		case k == "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil
			}
			f.noExtra = !b
		case k == "minLength" || k == "maxLength":
			x, ok := v.(float64)
			if !ok || x < 0 || x != math.Trunc(x) || x > math.MaxInt32 {
				return nil
			}
			if k == "minLength" {
				f.minLen = int(x)
			} else {
				f.maxLen = int(x)
			}
		default:
			return nil
		}
	}
	if len(f.props) >= indexProps {
		f.propIndex = make(map[string]*fastSchema, len(f.props))
		for _, p := range f.props {
			f.propIndex[p.name] = p.s
		}
	}
	return f
}

// indexProps is the count of properties from which they are looked up in
// a map: an instance's every key is looked up, and a caller chooses how
// many keys it sends.
const indexProps = 16

// valid reports whether the fast path is sure v is valid; false: ask the
// full validation.
func (f *fastSchema) valid(v any) bool {
	switch x := v.(type) {
	case nil:
		return f.allows(tNull)
	case bool:
		return f.allows(tBoolean)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return false
		}
		return f.allows(tNumber) || f.allows(tInteger) && x == math.Trunc(x)
	case string:
		if !f.allows(tString) {
			return false
		}
		if f.minLen < 0 && f.maxLen < 0 {
			return true
		}
		// A string of len(x) bytes has from len(x)/4 to len(x) characters
		// as the validator counts them (a byte not UTF-8 is one): most are
		// within the limits by their length alone, uncounted.
		if (len(x)+3)/4 >= f.minLen && (f.maxLen < 0 || len(x) <= f.maxLen) {
			return true
		}
		n := utf8.RuneCountInString(x)
		return n >= f.minLen && (f.maxLen < 0 || n <= f.maxLen)
	case []any:
		return f.allows(tArray)
	case *ojson.Object:
		if !f.allows(tObject) {
			return false
		}
		for _, name := range f.required {
			if _, ok := x.Get(name); !ok {
				return false
			}
		}
		for i, k := range x.Keys {
			p := f.prop(k)
			if p == nil {
				if f.noExtra {
					return false
				}
				continue
			}
			if !p.valid(x.Vals[i]) {
				return false
			}
		}
		return true
	}
	return false
}

func (f *fastSchema) allows(t uint8) bool { return f.types == 0 || f.types&t != 0 }

func (f *fastSchema) prop(name string) *fastSchema {
	if f.propIndex != nil {
		return f.propIndex[name]
	}
	for _, p := range f.props {
		if p.name == name {
			return p.s
		}
	}
	return nil
}
