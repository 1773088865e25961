package instrument

import (
	"fmt"
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
	out = appendU32(out, uint32(len(body)))
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
		entry = appendName(entry, ImportModule)
		entry = appendName(entry, ImportRefill)
		entry = append(entry, 0x00)
		entry = appendU32(entry, m.refillType)
		return m.insertImport(s.body, entry)
	case secTable:
		return m.rewriteTables(s.body)
	case secGlobal:
		g := []byte{0x7e, 0x01, 0x42, 0x00, 0x0b, 0x7f, 0x01, 0x41, 0x00, 0x0b} // mut i64 = 0 (fuel), mut i32 = 0 (stack)
		return m.rewriteGlobals(s.body, g)
	case secExport:
		return m.rewriteExports(s.body)
	case secStart:
		r := &reader{b: s.body}
		idx := r.index("start function", m.funcs())
		if err := r.end("start section"); err != nil {
			return nil, err
		}
		return appendU32(nil, m.fn(idx)), nil
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
	r := &reader{b: body}
	n := r.u32()
	if r.err != nil {
		return nil, r.wrap("vector")
	}
	out := appendU32(nil, n+1)
	out = append(out, body[r.off:]...)
	return append(out, entry...), nil
}

// insertImport puts the refill import after the last function import, so
// imported functions keep their indices.
func (m *module) insertImport(body, entry []byte) ([]byte, error) {
	r := &reader{b: body}
	n := r.u32()
	countEnd := r.off
	var funcs uint32
	insertAt := r.off
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.name()
		r.name()
		if r.importDesc(uint32(len(m.types))) == 0x00 {
			funcs++
			if funcs == m.funcImports {
				insertAt = r.off
			}
		}
	}
	if err := r.end("import section"); err != nil {
		return nil, err
	}
	out := appendU32(nil, n+1)
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
	r := &reader{b: body}
	n := r.u32()
	var tables []table
	var mins uint64
	for i := uint32(0); i < n && r.err == nil; i++ {
		t := table{ref: r.byte()}
		flags := r.byte()
		if r.err == nil && flags > 1 {
			return nil, errorf("table section: limits flags 0x%02x", flags)
		}
		t.min = uint64(r.u32())
		if t.hasMax = flags == 1; t.hasMax {
			t.max = uint64(r.u32())
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
	out := appendU32(nil, n)
	for _, t := range tables {
		clamp := t.min + share
		if t.hasMax && t.max < clamp {
			clamp = t.max // may be below min: invalid as written, and still
		}
		out = append(out, t.ref, 0x01)
		out = appendU32(appendU32(out, uint32(t.min)), uint32(clamp))
	}
	return out, nil
}

func (m *module) rewriteGlobals(body, entry []byte) ([]byte, error) {
	r := &reader{b: body}
	n := r.u32()
	out := appendU32(nil, n+2)
	first := uint32(len(m.importedMut))
	for i := uint32(0); i < n && r.err == nil; i++ {
		typ, mut := r.byte(), r.byte()
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
	r := &reader{b: body}
	n := r.u32()
	out := appendU32(nil, n+2+uint32(len(m.info.Globals)))
	for i := uint32(0); i < n && r.err == nil; i++ {
		name := r.name()
		if r.err == nil && reservedExport(name) {
			return nil, errorf("the module already exports %q", name)
		}
		out = appendName(out, name)
		kind := r.byte()
		var idx uint32
		switch kind {
		case 0x00:
			idx = m.fn(r.index("exported function", m.funcs()))
		case 0x03:
			idx = r.index("exported global", m.globals)
		default:
			idx = r.u32()
		}
		out = appendU32(append(out, kind), idx)
	}
	if err := r.end("export section"); err != nil {
		return nil, err
	}
	out = appendName(out, GlobalExport)
	out = appendU32(append(out, 0x03), m.fuelGlobal)
	out = appendName(out, StackExport)
	out = appendU32(append(out, 0x03), m.stackGlobal)
	for _, g := range m.info.Globals {
		out = appendName(out, GlobalPrefix+strconv.FormatUint(uint64(g), 10))
		out = appendU32(append(out, 0x03), g)
	}
	return out, nil
}

// constExpr copies a constant expression, checking global.get and
// renumbering ref.func.
func (m *module) constExpr(r *reader, out []byte) ([]byte, error) {
	for r.err == nil {
		start := r.off
		op := r.byte()
		switch op {
		case 0x0b:
			return append(out, op), nil
		case 0xd2:
			out = appendU32(append(out, op), m.fn(r.index("function", m.funcs())))
			continue
		case 0x41, 0x42:
			r.leb()
		case 0x43:
			r.bytes(4)
		case 0x44:
			r.bytes(8)
		case 0x23:
			// only an imported immutable global is constant
			if i := r.index("imported global", uint32(len(m.importedMut))); r.err == nil && m.importedMut[i] {
				return nil, fmt.Errorf("%w: %w: a constant expression reads mutable global %d", ErrInstrument, errStrict, i)
			}
		case 0xd0:
			r.byte()
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e:
		case 0xfd:
			if r.u32() != 12 {
				return nil, errorf("unsupported constant instruction")
			}
			r.bytes(16)
		default:
			if r.err == nil {
				return nil, errorf("unsupported constant instruction 0x%02x", op)
			}
		}
		out = append(out, r.b[start:r.off]...)
	}
	return nil, r.wrap("constant expression")
}

func (m *module) rewriteElements(body []byte) ([]byte, error) {
	r := &reader{b: body}
	n := r.u32()
	out := appendU32(nil, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		flags := r.u32()
		if flags > 7 {
			return nil, errorf("element section: unknown segment kind %d", flags)
		}
		out = appendU32(out, flags)
		if flags&2 != 0 && flags&1 == 0 {
			out = appendU32(out, r.u32())
		}
		var err error
		if flags&1 == 0 {
			if out, err = m.constExpr(r, out); err != nil {
				return nil, err
			}
		}
		if flags&3 != 0 {
			out = append(out, r.byte())
		}
		count := r.u32()
		out = appendU32(out, count)
		for j := uint32(0); j < count && r.err == nil; j++ {
			if flags&4 == 0 {
				out = appendU32(out, m.fn(r.index("function", m.funcs())))
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
	r := &reader{b: body}
	if r.name() != "name" || r.err != nil {
		return body, nil
	}
	out := append([]byte(nil), body[:r.off]...)
	for !r.done() && r.err == nil {
		sub := r.byte()
		size := r.u32()
		payload := r.bytes(int(size))
		if r.err != nil {
			break
		}
		if sub == 1 || sub == 2 {
			p := &reader{b: payload}
			var np []byte
			count := p.u32()
			np = appendU32(np, count)
			for i := uint32(0); i < count && p.err == nil; i++ {
				np = appendU32(np, m.fn(p.index("function", m.funcs())))
				if sub == 1 {
					np = appendName(np, p.name())
					continue
				}
				locals := p.u32()
				np = appendU32(np, locals)
				for j := uint32(0); j < locals && p.err == nil; j++ {
					np = appendU32(np, p.u32())
					np = appendName(np, p.name())
				}
			}
			if p.err != nil || !p.done() {
				return body, nil
			}
			payload = np
		}
		out = appendSection(out, sub, payload)
	}
	if r.err != nil {
		return body, nil
	}
	return out, nil
}
