package wasmbin

import (
	"bytes"
	"errors"
	"fmt"
)

// WithBundle makes a pack's module from one of packd's language runtimes
// (the JavaScript and the Python one) and the pack's bundle: the bundle
// becomes a passive data segment of its own, and the body of the
// runtime's function export, of type (i32) -> i32, is replaced by one
// that answers the bundle's length for 0 and otherwise copies it to the
// address it is given (memory.init). Nothing else in the runtime changes
// (no index moves), so the pack's module runs the runtime's code exactly.
func WithBundle(runtime []byte, export string, bundle []byte) ([]byte, error) {
	if len(bundle) == 0 {
		return nil, errors.New("the bundle is empty")
	}
	m, err := parseModule(runtime)
	if err != nil {
		return nil, fmt.Errorf("the runtime: %w", err)
	}
	fn, err := m.bundleFunc(export)
	if err != nil {
		return nil, fmt.Errorf("the runtime: %w", err)
	}
	segments := uint32(0)
	if d := m.section(secData); d != nil {
		r := Reader{B: d.Body}
		if segments = r.U32(); r.Err != nil {
			return nil, fmt.Errorf("the runtime's data section: %w", r.Err)
		}
	}
	if dc := m.section(secDataCount); dc != nil {
		r := Reader{B: dc.Body}
		if n := r.U32(); r.Err != nil || n != segments {
			return nil, errors.New("the runtime's data count section does not match its data section")
		}
	}

	code, old, err := m.replaceBody(fn, bundleBody(segments, uint32(len(bundle))))
	if err != nil {
		return nil, fmt.Errorf("the runtime's code section: %w", err)
	}
	if bytes.Contains(old, []byte{0xfc, 0x08}) { // memory.init: a body Module wrote
		return nil, errors.New("the runtime already holds a bundle: make the module from packd's runtime")
	}
	data := appendPassive(m.section(secData), bundle)
	count := AppendU32(nil, segments+1)

	var out bytes.Buffer
	out.Write(runtime[:8])
	wroteCount := false
	for _, s := range m.sections {
		switch s.ID {
		case secDataCount:
			continue // written before the code section
		case secCode:
			writeSection(&out, secDataCount, count)
			wroteCount = true
			writeSection(&out, secCode, code)
			continue
		case secData:
			writeSection(&out, secData, data)
			data = nil
			continue
		}
		out.Write(s.Raw)
	}
	if !wroteCount {
		return nil, errors.New("the runtime has no code section")
	}
	if data != nil {
		writeSection(&out, secData, data)
	}
	return out.Bytes(), nil
}

// Sections of a module, by id.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secExport    = 7
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

type module struct{ sections []Section }

func parseModule(b []byte) (*module, error) {
	sections, err := Sections(b)
	if err != nil {
		return nil, err
	}
	return &module{sections: sections}, nil
}

func (m *module) section(id byte) *Section {
	for i := range m.sections {
		if m.sections[i].ID == id {
			return &m.sections[i]
		}
	}
	return nil
}

// bundleFunc is the index, among the module's defined functions, of the
// function export named export, checked to be of type (i32) -> i32.
func (m *module) bundleFunc(export string) (uint32, error) {
	exp := m.section(secExport)
	if exp == nil {
		return 0, fmt.Errorf("no %s export", export)
	}
	r := Reader{B: exp.Body}
	index, found := uint32(0), false
	for n := r.U32(); n > 0 && r.Err == nil; n-- {
		name := r.Vec()
		kind := r.Byte()
		idx := r.U32()
		if string(name) == export && kind == 0 {
			index, found = idx, true
		}
	}
	if r.Err != nil {
		return 0, fmt.Errorf("the export section: %w", r.Err)
	}
	if !found {
		return 0, fmt.Errorf("no %s export: is this the runtime of packd's that has it?", export)
	}
	imported := uint32(0)
	if imp := m.section(secImport); imp != nil {
		r := Reader{B: imp.Body}
		for n := r.U32(); n > 0 && r.Err == nil; n-- {
			r.Vec()
			r.Vec()
			if r.ImportDesc(^uint32(0)) == 0 {
				imported++
			}
		}
		if r.Err != nil {
			return 0, fmt.Errorf("the import section: %w", r.Err)
		}
	}
	if index < imported {
		return 0, fmt.Errorf("%s is imported", export)
	}
	defined := index - imported
	fs := m.section(secFunction)
	ts := m.section(secType)
	if fs == nil || ts == nil {
		return 0, errors.New("no function or type section")
	}
	fr := Reader{B: fs.Body}
	typeIdx := uint32(0)
	n := fr.U32()
	if defined >= n {
		return 0, fmt.Errorf("%s's function is not in the function section", export)
	}
	for i := uint32(0); i <= defined && fr.Err == nil; i++ {
		typeIdx = fr.U32()
	}
	tr := Reader{B: ts.Body}
	for i, nt := uint32(0), tr.U32(); i < nt && tr.Err == nil; i++ {
		form := tr.Byte()
		params := tr.Vec()
		results := tr.Vec()
		if i == typeIdx {
			if form != 0x60 || !bytes.Equal(params, []byte{0x7f}) || !bytes.Equal(results, []byte{0x7f}) {
				return 0, fmt.Errorf("%s is not of type (i32) -> i32", export)
			}
			return defined, errors.Join(fr.Err, tr.Err)
		}
	}
	return 0, fmt.Errorf("%s's type is not in the type section", export)
}

// replaceBody is the code section with body fn replaced by body, and the
// body it replaced.
func (m *module) replaceBody(fn uint32, body []byte) ([]byte, []byte, error) {
	cs := m.section(secCode)
	if cs == nil {
		return nil, nil, errors.New("missing")
	}
	r := Reader{B: cs.Body}
	n := r.U32()
	if fn >= n {
		return nil, nil, errors.New("has no body for the bundle function")
	}
	start := r.Off
	for i := uint32(0); i < fn && r.Err == nil; i++ {
		r.Vec()
	}
	from := r.Off
	size := r.U32()
	at := r.Off
	r.Bytes(int(size))
	if r.Err != nil {
		return nil, nil, r.Err
	}
	out := AppendU32(nil, n)
	out = append(out, cs.Body[start:from]...)
	out = AppendU32(out, uint32(len(body)))
	out = append(out, body...)
	return append(out, cs.Body[r.Off:]...), cs.Body[at:r.Off], nil
}

// bundleBody is the bundle function's body: (local.get 0) i32.eqz, and then
// the length, or memory.init of segment seg into dst and the length.
func bundleBody(seg, length uint32) []byte {
	n := AppendS64(nil, int64(length))
	b := []byte{0x00} // no locals
	b = append(b, 0x20, 0x00, 0x45, 0x04, 0x7f, 0x41)
	b = append(b, n...)
	b = append(b, 0x05, 0x20, 0x00, 0x41, 0x00, 0x41)
	b = append(b, n...)
	b = append(b, 0xfc, 0x08)
	b = AppendU32(b, seg)
	b = append(b, 0x00, 0x41)
	b = append(b, n...)
	return append(b, 0x0b, 0x0b)
}

// appendPassive is the data section (nil: none yet) with one more
// segment, passive, holding bundle.
func appendPassive(data *Section, bundle []byte) []byte {
	var n uint32
	var rest []byte
	if data != nil {
		r := Reader{B: data.Body}
		n = r.U32()
		rest = data.Body[r.Off:]
	}
	out := AppendU32(nil, n+1)
	out = append(out, rest...)
	out = append(out, 0x01)
	out = AppendU32(out, uint32(len(bundle)))
	return append(out, bundle...)
}

func writeSection(w *bytes.Buffer, id byte, body []byte) {
	w.WriteByte(id)
	w.Write(AppendU32(nil, uint32(len(body))))
	w.Write(body)
}
