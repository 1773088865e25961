package guest

import (
	"encoding/json"
	"unsafe"

	"github.com/kindgi/packd/abi/guest/wire"
)

// A call's request is read from where packd says its fields lie
// (kindgi.request_fields, wasip1.go): one host call, no key to match and
// no value to check, and few branches, each of which is dear in a Go
// module (a jump through its function's br_table). Finding them with
// json_members and matching each key here was about 14,000 of the 19,800
// units of fuel of a pooled echo call. A request packd cannot describe so
// (see wire.RequestFields), or one read outside a call (Dispatch), takes
// the decoders of decode.go.

// field is where a field's value lies in the request, as request_fields
// writes it (a string's inside its quotes), and its flags.
type field struct{ start, len, flags uint32 }

// fields is a request's, in the order of wire.RequestFields.
type fields [wire.FieldCount]field

// request reads the request req into r from its fields. Its strings and
// values share req's bytes (see decodeRequest's alias); inputAsIs: as
// decodeRequest's.
// It returns the request, rather than fill one it is given: stores into
// its result need no write barrier, and each pointer stored through a
// pointer checks for one.
func (f *fields) request(req []byte) (r request, inputAsIs bool) {
	r.Kind = f.str(req, wire.FieldKind)
	r.Tool.ID, r.Tool.Version = f.str(req, wire.FieldToolID), f.str(req, wire.FieldToolVersion)
	r.Check.ID = f.str(req, wire.FieldCheckID)
	r.Input, r.Ctx = f.raw(req, wire.FieldInput), f.raw(req, wire.FieldCtx)
	r.Config, r.Trace = f.raw(req, wire.FieldConfig), f.raw(req, wire.FieldTrace)
	in := f[wire.FieldInput]
	return r, in.len != 0 && in.flags&(memberValueSpace|memberValueEscaped) == 0
}

// context reads the request req's ctx into c (which holds none yet) from
// its fields; false: use decodeContext (which leaves a request without a
// ctx to encoding/json, and its error).
func (f *fields) context(req []byte, c *Context) bool {
	if f[wire.FieldCtx].len == 0 {
		return false
	}
	c.TenantID, c.RunID = f.str(req, wire.FieldTenantID), f.str(req, wire.FieldRunID)
	c.ProjectID, c.OrgID = f.str(req, wire.FieldProjectID), f.str(req, wire.FieldOrgID)
	c.RequestID, c.IdempotencyKey = f.str(req, wire.FieldRequestID), f.str(req, wire.FieldIdempotencyKey)
	if f[wire.FieldEnv].len|f[wire.FieldSecrets].len|f[wire.FieldSettings].len == 0 {
		return true
	}
	return (f[wire.FieldEnv].len == 0 || c.env(f.raw(req, wire.FieldEnv), true)) &&
		(f[wire.FieldSecrets].len == 0 || c.secrets(f.raw(req, wire.FieldSecrets), true)) &&
		(f[wire.FieldSettings].len == 0 || c.settings(f.raw(req, wire.FieldSettings), true))
}

// str is string field i ("": the request has none), sharing req's bytes.
// The string is made from its parts, not by unsafe.String, whose checks
// (of a length packd wrote) cost a Go guest a few hundred units of fuel
// a call.
func (f *fields) str(req []byte, i int) string {
	return *(*string)(unsafe.Pointer(&stringParts{f.at(req, i), int(f[i].len)}))
}

// raw is field i's value (nil: the request has none), sharing req's
// bytes, without room past its end (see member.value).
func (f *fields) raw(req []byte, i int) json.RawMessage {
	if f[i].len == 0 {
		return nil
	}
	n := int(f[i].len)
	return *(*json.RawMessage)(unsafe.Pointer(&sliceParts{f.at(req, i), n, n}))
}

// stringParts and sliceParts are a string's and a slice's layout.
type (
	stringParts struct {
		data *byte
		len  int
	}
	sliceParts struct {
		data     *byte
		len, cap int
	}
)

// at is where field i starts: inside req, which packd wrote the fields
// of (a request's fields lie inside it).
func (f *fields) at(req []byte, i int) *byte {
	return (*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(req)), f[i].start))
}
