package instrument

import "github.com/kindgi/packd/internal/wasmbin"

// reader decodes the binary format (wasmbin.Reader); the first error
// sticks and ends input.
type reader struct{ wasmbin.Reader }

func (r *reader) wrap(where string) error {
	if r.Err != nil {
		return errorf("%s: %v", where, r.Err)
	}
	return nil
}

// end is wrap, and also refuses bytes left after the entries: a section
// is read to its exact end.
func (r *reader) end(where string) error {
	if r.Err == nil && !r.Done() {
		r.Fail("%d bytes after its last entry", len(r.B)-r.Off)
	}
	return r.wrap(where)
}
