package instrument

import (
	"fmt"
	"github.com/kindgi/packd/internal/wasmbin"
	"strconv"
)

func (m *module) emit() ([]byte, error) {
	out := append([]byte(nil), "\x00asm\x01\x00\x00\x00"...)
	need := map[byte]bool{secType: m.addType, secImport: true, secGlobal: true, secExport: true}
	seen := map[byte]bool{}
	emitMissing := func(before int) error {
		for _, id := range []byte{secType, secImport, secGlobal, secExport} {
			if need[id] && !seen[id] && order[id] < before {
				seen[id] = true
				body, err := m.rewrite(section{id: id, body: []byte{0}})
				if err != nil {
					return err
				}
				out = appendSection(out, id, body)
			}
		}
		return nil
	}
	// Sections the module lacks go where their order puts them, and the
	// last ones before any custom sections that end the module (a name
	// section must follow every known section).
	lastKnown := -1
	for i, s := range m.sections {
		if s.id != secCustom {
			lastKnown = i
		}
	}
	if lastKnown < 0 {
		if err := emitMissing(100); err != nil {
			return nil, err
		}
	}
	for i, s := range m.sections {
		if s.id != secCustom {
			if err := emitMissing(order[s.id]); err != nil {
				return nil, err
			}
			seen[s.id] = true
		}
		body, err := m.rewrite(s)
		if err != nil {
			return nil, err
		}
		out = appendSection(out, s.id, body)
		if i == lastKnown {
			if err := emitMissing(100); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func appendSection(out []byte, id byte, body []byte) []byte {
	out = append(out, id)
	out = wasmbin.AppendU32(out, uint32(len(body)))
	return append(out, body...)
}

// rewrite returns a section's new body.
func (m *module) rewrite(s section) ([]byte, error) {
	switch s.id {
	case secType:
		if !m.addType {
			return s.body, nil
		}
		return m.appendToVector(s.body, []byte{0x60, 0, 0})
	case secImport:
		var entry []byte
		entry = wasmbin.AppendName(entry, ImportModule)
		entry = wasmbin.AppendName(entry, ImportRefill)
		entry = append(entry, 0x00)
		entry = wasmbin.AppendU32(entry, m.refillType)
		return m.insertImport(s.body, entry)
	case secTable:
		return m.rewriteTables(s.body)
	case secGlobal:
		g := []byte{0x7e, 0x01, 0x42, 0x00, 0x0b, 0x7f, 0x01, 0x41, 0x00, 0x0b} // mut i64 = 0 (fuel), mut i32 = 0 (stack)
		return m.rewriteGlobals(s.body, g)
	case secExport:
		return m.rewriteExports(s.body)
	case secStart:
		r := &reader{wasmbin.Reader{B: s.body}}
		idx := r.Index("start function", m.funcs())
		if err := r.end("start section"); err != nil {
			return nil, err
		}
		return wasmbin.AppendU32(nil, m.fn(idx)), nil
	case secElement:
		return m.rewriteElements(s.body)
	case secCode:
		return m.rewriteCode(s.body)
	case secCustom:
		return m.rewriteCustom(s.body)
	case secData:
		return m.mergeData(s.body), nil
	}
	return s.body, nil
}

// appendToVector adds one entry at the end of a vector section (read to
// its end by parse).
func (m *module) appendToVector(body, entry []byte) ([]byte, error) {
	r := &reader{wasmbin.Reader{B: body}}
	n := r.U32()
	if r.Err != nil {
		return nil, r.wrap("vector")
	}
	out := wasmbin.AppendU32(nil, n+1)
	out = append(out, body[r.Off:]...)
	return append(out, entry...), nil
}

// insertImport puts the refill import after the last function import, so
// imported functions keep their indices.
func (m *module) insertImport(body, entry []byte) ([]byte, error) {
	r := &reader{wasmbin.Reader{B: body}}
	n := r.U32()
	countEnd := r.Off
	var funcs uint32
	insertAt := r.Off
	for i := uint32(0); i < n && r.Err == nil; i++ {
		r.Name()
		r.Name()
		if r.ImportDesc(uint32(len(m.types))) == 0x00 {
			funcs++
			if funcs == m.funcImports {
				insertAt = r.Off
			}
		}
	}
	if err := r.end("import section"); err != nil {
		return nil, err
	}
	out := wasmbin.AppendU32(nil, n+1)
	out = append(out, body[countEnd:insertAt]...)
	out = append(out, entry...)
	return append(out, body[insertAt:]...), nil
}

// rewriteTables clamps every defined table's maximum (Options.MaxTableElements).
func (m *module) rewriteTables(body []byte) ([]byte, error) {
	limit := uint64(m.opt.MaxTableElements)
	if limit == 0 {
		return body, nil
	}
	type table struct {
		ref      byte
		min, max uint64
		hasMax   bool
	}
	r := &reader{wasmbin.Reader{B: body}}
	n := r.U32()
	var tables []table
	var mins uint64
	for i := uint32(0); i < n && r.Err == nil; i++ {
		t := table{ref: r.Byte()}
		flags := r.Byte()
		if r.Err == nil && flags > 1 {
			return nil, errorf("table section: limits flags 0x%02x", flags)
		}
		t.min = uint64(r.U32())
		if t.hasMax = flags == 1; t.hasMax {
			t.max = uint64(r.U32())
		}
		mins += t.min
		tables = append(tables, t)
	}
	if err := r.end("table section"); err != nil {
		return nil, err
	}
	if mins > limit {
		return nil, limitf("table section: tables of %d elements in all are over the limit of %d", mins, limit)
	}
	share := (limit - mins) / uint64(max(len(tables), 1))
	out := wasmbin.AppendU32(nil, n)
	for _, t := range tables {
		clamp := t.min + share
		if t.hasMax && t.max < clamp {
			clamp = t.max // may be below min: invalid as written, and still
		}
		out = append(out, t.ref, 0x01)
		out = wasmbin.AppendU32(wasmbin.AppendU32(out, uint32(t.min)), uint32(clamp))
	}
	return out, nil
}

func (m *module) rewriteGlobals(body, entry []byte) ([]byte, error) {
	r := &reader{wasmbin.Reader{B: body}}
	n := r.U32()
	out := wasmbin.AppendU32(nil, n+2)
	first := uint32(len(m.importedMut))
	for i := uint32(0); i < n && r.Err == nil; i++ {
		typ, mut := r.Byte(), r.Byte()
		if mut != 0 {
			m.info.Globals = append(m.info.Globals, first+i)
			m.info.RefGlobals = m.info.RefGlobals || typ == 0x70 || typ == 0x6f
		}
		out = append(out, typ, mut)
		var err error
		if out, err = m.constExpr(r, out); err != nil {
			return nil, err
		}
	}
	if err := r.end("global section"); err != nil {
		return nil, err
	}
	return append(out, entry...), nil
}

func (m *module) rewriteExports(body []byte) ([]byte, error) {
	r := &reader{wasmbin.Reader{B: body}}
	n := r.U32()
	out := wasmbin.AppendU32(nil, n+2+uint32(len(m.info.Globals)))
	for i := uint32(0); i < n && r.Err == nil; i++ {
		name := r.Name()
		if r.Err == nil && reservedExport(name) {
			return nil, errorf("the module already exports %q", name)
		}
		out = wasmbin.AppendName(out, name)
		kind := r.Byte()
		var idx uint32
		switch kind {
		case 0x00:
			idx = m.fn(r.Index("exported function", m.funcs()))
		case 0x03:
			idx = r.Index("exported global", m.globals)
		default:
			idx = r.U32()
		}
		out = wasmbin.AppendU32(append(out, kind), idx)
	}
	if err := r.end("export section"); err != nil {
		return nil, err
	}
	out = wasmbin.AppendName(out, GlobalExport)
	out = wasmbin.AppendU32(append(out, 0x03), m.fuelGlobal)
	out = wasmbin.AppendName(out, StackExport)
	out = wasmbin.AppendU32(append(out, 0x03), m.stackGlobal)
	for _, g := range m.info.Globals {
		out = wasmbin.AppendName(out, GlobalPrefix+strconv.FormatUint(uint64(g), 10))
		out = wasmbin.AppendU32(append(out, 0x03), g)
	}
	return out, nil
}

// constExpr copies a constant expression, checking global.get and
// renumbering ref.func.
func (m *module) constExpr(r *reader, out []byte) ([]byte, error) {
	for r.Err == nil {
		start := r.Off
		op := r.Byte()
		switch op {
		case 0x0b:
			return append(out, op), nil
		case 0xd2:
			out = wasmbin.AppendU32(append(out, op), m.fn(r.Index("function", m.funcs())))
			continue
		case 0x41, 0x42:
			r.Leb()
		case 0x43:
			r.Bytes(4)
		case 0x44:
			r.Bytes(8)
		case 0x23:
			// only an imported immutable global is constant
			if i := r.Index("imported global", uint32(len(m.importedMut))); r.Err == nil && m.importedMut[i] {
				return nil, fmt.Errorf("%w: %w: a constant expression reads mutable global %d", ErrInstrument, errStrict, i)
			}
		case 0xd0:
			r.Byte()
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e:
		case 0xfd:
			if r.U32() != 12 {
				return nil, errorf("unsupported constant instruction")
			}
			r.Bytes(16)
		default:
			if r.Err == nil {
				return nil, errorf("unsupported constant instruction 0x%02x", op)
			}
		}
		out = append(out, r.B[start:r.Off]...)
	}
	return nil, r.wrap("constant expression")
}

func (m *module) rewriteElements(body []byte) ([]byte, error) {
	r := &reader{wasmbin.Reader{B: body}}
	n := r.U32()
	out := wasmbin.AppendU32(nil, n)
	for i := uint32(0); i < n && r.Err == nil; i++ {
		flags := r.U32()
		if flags > 7 {
			return nil, errorf("element section: unknown segment kind %d", flags)
		}
		out = wasmbin.AppendU32(out, flags)
		if flags&2 != 0 && flags&1 == 0 {
			out = wasmbin.AppendU32(out, r.U32())
		}
		var err error
		if flags&1 == 0 {
			if out, err = m.constExpr(r, out); err != nil {
				return nil, err
			}
		}
		if flags&3 != 0 {
			out = append(out, r.Byte())
		}
		count := r.U32()
		out = wasmbin.AppendU32(out, count)
		for j := uint32(0); j < count && r.Err == nil; j++ {
			if flags&4 == 0 {
				out = wasmbin.AppendU32(out, m.fn(r.Index("function", m.funcs())))
			} else if out, err = m.constExpr(r, out); err != nil {
				return nil, err
			}
		}
	}
	if err := r.end("element section"); err != nil {
		return nil, err
	}
	return out, nil
}

// rewriteCustom renumbers the name section's function indices; other custom
// sections are copied. A name section it cannot read, or that names a
// function the module does not have, is copied as it is: wazero then
// accepts or refuses it exactly as it would the module as written (its
// names may be one off: they only name things).
func (m *module) rewriteCustom(body []byte) ([]byte, error) {
	r := &reader{wasmbin.Reader{B: body}}
	if r.Name() != "name" || r.Err != nil {
		return body, nil
	}
	out := append([]byte(nil), body[:r.Off]...)
	for !r.Done() && r.Err == nil {
		sub := r.Byte()
		size := r.U32()
		payload := r.Bytes(int(size))
		if r.Err != nil {
			break
		}
		if sub == 1 || sub == 2 {
			p := &reader{wasmbin.Reader{B: payload}}
			var np []byte
			count := p.U32()
			np = wasmbin.AppendU32(np, count)
			for i := uint32(0); i < count && p.Err == nil; i++ {
				np = wasmbin.AppendU32(np, m.fn(p.Index("function", m.funcs())))
				if sub == 1 {
					np = wasmbin.AppendName(np, p.Name())
					continue
				}
				locals := p.U32()
				np = wasmbin.AppendU32(np, locals)
				for j := uint32(0); j < locals && p.Err == nil; j++ {
					np = wasmbin.AppendU32(np, p.U32())
					np = wasmbin.AppendName(np, p.Name())
				}
			}
			if p.Err != nil || !p.Done() {
				return body, nil
			}
			payload = np
		}
		out = appendSection(out, sub, payload)
	}
	if r.Err != nil {
		return body, nil
	}
	return out, nil
}
