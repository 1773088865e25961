package jssdk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/kindgi/packd/abi"
)

// BundleExport is the runtime's function that hands its bundle over:
// kindgi_js_bundle(0) is the bundle's length, kindgi_js_bundle(dst)
// copies it to dst. As built, the runtime answers 0 (no bundle).
const BundleExport = abi.ExportJSBundle

// MaxBundle is the largest bundle Module takes (packd loads modules of up
// to 64 MiB by default; a bundle that size is a mistake in the build).
const MaxBundle = 32 << 20

// Module makes a pack's module from the runtime and the pack's bundled
// JavaScript: the bundle becomes a passive data segment of its own, and
// kindgi_js_bundle's body is replaced by one that copies it out with
// memory.init. Nothing else in the runtime changes (no index moves), so
// the pack's module runs the runtime's code exactly.
func Module(runtime, bundle []byte) ([]byte, error) {
	switch {
	case len(bundle) == 0:
		return nil, errors.New("the bundle is empty")
	case len(bundle) > MaxBundle:
		return nil, fmt.Errorf("the bundle is %d bytes, over the %d a module takes", len(bundle), MaxBundle)
	case !utf8.Valid(bundle):
		return nil, errors.New("the bundle is not UTF-8")
	}
	m, err := parseModule(runtime)
	if err != nil {
		return nil, fmt.Errorf("the runtime: %w", err)
	}
	fn, err := m.bundleFunc()
	if err != nil {
		return nil, fmt.Errorf("the runtime: %w", err)
	}
	segments := uint32(0)
	if d := m.section(secData); d != nil {
		if segments, _, err = readU32(d.body); err != nil {
			return nil, fmt.Errorf("the runtime's data section: %w", err)
		}
	}
	if dc := m.section(secDataCount); dc != nil {
		n, _, err := readU32(dc.body)
		if err != nil || n != segments {
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
	count := binary.AppendUvarint(nil, uint64(segments)+1)

	var out bytes.Buffer
	out.Write(runtime[:8])
	wroteCount := false
	for _, s := range m.sections {
		switch s.id {
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
		out.Write(s.raw)
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

type section struct {
	id   byte
	body []byte // the section's contents
	raw  []byte // id, size and contents, as read
}

type module struct{ sections []section }

func parseModule(b []byte) (*module, error) {
	if len(b) < 8 || !bytes.Equal(b[:8], []byte{0, 'a', 's', 'm', 1, 0, 0, 0}) {
		return nil, errors.New("not a WebAssembly 1.0 module")
	}
	m := &module{}
	for p := 8; p < len(b); {
		start := p
		id := b[p]
		size, n, err := readU32(b[p+1:])
		if err != nil {
			return nil, fmt.Errorf("section at %d: %w", start, err)
		}
		p += 1 + n
		if uint64(p)+uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("section at %d runs past the end", start)
		}
		m.sections = append(m.sections, section{id: id, body: b[p : p+int(size)], raw: b[start : p+int(size)]})
		p += int(size)
	}
	return m, nil
}

func (m *module) section(id byte) *section {
	for i := range m.sections {
		if m.sections[i].id == id {
			return &m.sections[i]
		}
	}
	return nil
}

// bundleFunc is the index, among the module's defined functions, of
// BundleExport, checked to be of type (i32) -> i32.
func (m *module) bundleFunc() (uint32, error) {
	exp := m.section(secExport)
	if exp == nil {
		return 0, fmt.Errorf("no %s export", BundleExport)
	}
	r := reader{b: exp.body}
	index, found := uint32(0), false
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		name := r.bytes()
		kind := r.byte()
		idx := r.u32()
		if string(name) == BundleExport && kind == 0 {
			index, found = idx, true
		}
	}
	if r.err != nil {
		return 0, fmt.Errorf("the export section: %w", r.err)
	}
	if !found {
		return 0, fmt.Errorf("no %s export: is this packd's JavaScript runtime?", BundleExport)
	}
	imported := uint32(0)
	if imp := m.section(secImport); imp != nil {
		r := reader{b: imp.body}
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			r.bytes()
			r.bytes()
			switch r.byte() {
			case 0:
				imported++
				r.u32()
			case 1: // table: reftype, limits
				r.byte()
				r.limits()
			case 2:
				r.limits()
			case 3:
				r.byte()
				r.byte()
			default:
				r.err = errors.New("an unknown import kind")
			}
		}
		if r.err != nil {
			return 0, fmt.Errorf("the import section: %w", r.err)
		}
	}
	if index < imported {
		return 0, fmt.Errorf("%s is imported", BundleExport)
	}
	defined := index - imported
	fs := m.section(secFunction)
	ts := m.section(secType)
	if fs == nil || ts == nil {
		return 0, errors.New("no function or type section")
	}
	fr := reader{b: fs.body}
	typeIdx := uint32(0)
	n := fr.u32()
	if defined >= n {
		return 0, fmt.Errorf("%s's function is not in the function section", BundleExport)
	}
	for i := uint32(0); i <= defined && fr.err == nil; i++ {
		typeIdx = fr.u32()
	}
	tr := reader{b: ts.body}
	for i, nt := uint32(0), tr.u32(); i < nt && tr.err == nil; i++ {
		form := tr.byte()
		params := tr.bytes()
		results := tr.bytes()
		if i == typeIdx {
			if form != 0x60 || !bytes.Equal(params, []byte{0x7f}) || !bytes.Equal(results, []byte{0x7f}) {
				return 0, fmt.Errorf("%s is not of type (i32) -> i32", BundleExport)
			}
			return defined, errors.Join(fr.err, tr.err)
		}
	}
	return 0, fmt.Errorf("%s's type is not in the type section", BundleExport)
}

// replaceBody is the code section with body fn replaced by body, and the
// body it replaced.
func (m *module) replaceBody(fn uint32, body []byte) ([]byte, []byte, error) {
	cs := m.section(secCode)
	if cs == nil {
		return nil, nil, errors.New("missing")
	}
	r := reader{b: cs.body}
	n := r.u32()
	if fn >= n {
		return nil, nil, errors.New("has no body for the bundle function")
	}
	start := r.p
	for i := uint32(0); i < fn && r.err == nil; i++ {
		size := r.u32()
		r.skip(size)
	}
	from := r.p
	size := r.u32()
	at := r.p
	r.skip(size)
	if r.err != nil {
		return nil, nil, r.err
	}
	out := binary.AppendUvarint(nil, uint64(n))
	out = append(out, cs.body[start:from]...)
	out = binary.AppendUvarint(out, uint64(len(body)))
	out = append(out, body...)
	return append(out, cs.body[r.p:]...), cs.body[at:r.p], nil
}

// bundleBody is kindgi_js_bundle's body: (local.get 0) i32.eqz, and then
// the length, or memory.init of segment seg into dst and the length.
func bundleBody(seg, length uint32) []byte {
	n := appendSLEB(nil, int64(length))
	b := []byte{0x00} // no locals
	b = append(b, 0x20, 0x00, 0x45, 0x04, 0x7f, 0x41)
	b = append(b, n...)
	b = append(b, 0x05, 0x20, 0x00, 0x41, 0x00, 0x41)
	b = append(b, n...)
	b = append(b, 0xfc, 0x08)
	b = binary.AppendUvarint(b, uint64(seg))
	b = append(b, 0x00, 0x41)
	b = append(b, n...)
	return append(b, 0x0b, 0x0b)
}

// appendPassive is the data section (nil: none yet) with one more
// segment, passive, holding bundle.
func appendPassive(data *section, bundle []byte) []byte {
	var n uint32
	var rest []byte
	if data != nil {
		var k int
		n, k, _ = readU32(data.body)
		rest = data.body[k:]
	}
	out := binary.AppendUvarint(nil, uint64(n)+1)
	out = append(out, rest...)
	out = append(out, 0x01)
	out = binary.AppendUvarint(out, uint64(len(bundle)))
	return append(out, bundle...)
}

// appendSLEB appends v as a signed LEB128 number (i32.const's immediate;
// binary.AppendVarint is zig-zag, another encoding).
func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func writeSection(w *bytes.Buffer, id byte, body []byte) {
	w.WriteByte(id)
	w.Write(binary.AppendUvarint(nil, uint64(len(body))))
	w.Write(body)
}

func readU32(b []byte) (uint32, int, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 || n > 5 || v > 0xffffffff {
		return 0, 0, errors.New("a malformed LEB128 number")
	}
	return uint32(v), n, nil
}

// reader reads a section's contents; the first error sticks.
type reader struct {
	b   []byte
	p   int
	err error
}

func (r *reader) u32() uint32 {
	if r.err != nil {
		return 0
	}
	v, n, err := readU32(r.b[r.p:])
	if err != nil {
		r.err = err
		return 0
	}
	r.p += n
	return v
}

func (r *reader) byte() byte {
	if r.err != nil || r.p >= len(r.b) {
		r.err = errors.Join(r.err, errors.New("ends early"))
		return 0
	}
	r.p++
	return r.b[r.p-1]
}

func (r *reader) skip(n uint32) {
	if r.err == nil && uint64(r.p)+uint64(n) > uint64(len(r.b)) {
		r.err = errors.New("ends early")
	}
	if r.err == nil {
		r.p += int(n)
	}
}

func (r *reader) bytes() []byte {
	n := r.u32()
	from := r.p
	r.skip(n)
	if r.err != nil {
		return nil
	}
	return r.b[from:r.p]
}

func (r *reader) limits() {
	if r.byte()&1 == 1 {
		r.u32()
		r.u32()
		return
	}
	r.u32()
}
