// Package instrument rewrites a WebAssembly module once, at load, so that it
// meters its own execution with fuel (see ../../../RATIONALE.md, "Why fuel by
// instrumentation").
//
// The pass adds a mutable i64 global, exported as GlobalExport, and an
// imported host function ImportModule.ImportRefill of type () -> (), appended
// after the module's own function imports (so every defined function's index
// moves up by one, and every reference to it is renumbered: call, ref.func,
// element segments, exports, start, the name section). Then:
//
//   - at each function's entry and at each loop header, the static cost of the
//     code that runs from there until the next loop header or function end
//     (every instruction counts 1) is subtracted from the global, and when the
//     global is below zero the refill import is called;
//   - memory.fill, memory.copy, memory.init, table.fill, table.copy,
//     table.init and table.grow are charged by their length (BulkShift), and
//     memory.grow per page (GrowPageCost), before they run.
//
// Within one function region control only moves forward, so each
// instruction runs at most once per charge: the fuel used is an upper bound
// of the instructions run, and the same call always burns the same fuel.
// Sections the pass does not need to change are copied byte for byte.
package instrument

import (
	"errors"
	"fmt"
)

const (
	// ImportModule and ImportRefill name the host function the pass imports.
	ImportModule = "kindgi"
	ImportRefill = "fuel_refill"
	// GlobalExport names the fuel counter the pass adds and exports.
	GlobalExport = "kindgi_fuel"
	// BulkShift: bulk memory and table operations cost length >> BulkShift.
	BulkShift = 3
	// GrowPageCost is charged per page a memory.grow asks for.
	GrowPageCost = 1024
)

// ErrInstrument is wrapped by every error of the pass.
var ErrInstrument = errors.New("instrument")

func errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInstrument, fmt.Sprintf(format, args...))
}

// Section ids.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

// order ranks section ids by where they must appear.
var order = map[byte]int{secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5, secTag: 6,
	secGlobal: 7, secExport: 8, secStart: 9, secElement: 10, secDataCount: 11, secCode: 12, secData: 13}

type section struct {
	id   byte
	body []byte
}

// module is what the pass learns of a module before rewriting it.
type module struct {
	sections     []section
	types        [][2]int // param and result counts per type
	funcTypes    []uint32 // type index per defined function
	funcImports  uint32
	globals      uint32 // imported + defined
	refillType   uint32 // type index of () -> (), maybe appended
	addType      bool
	refillIndex  uint32 // the refill import's function index == funcImports
	fuelGlobal   uint32
	hasExportSec bool
}

// Instrument returns the metered module.
func Instrument(wasm []byte) ([]byte, error) {
	m := &module{}
	if err := m.parse(wasm); err != nil {
		return nil, err
	}
	return m.emit()
}

func (m *module) parse(wasm []byte) error {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" || string(wasm[4:8]) != "\x01\x00\x00\x00" {
		return errorf("not a WebAssembly 1.0 binary")
	}
	r := &reader{b: wasm, off: 8}
	last := 0
	for !r.done() {
		id := r.byte()
		size := r.u32()
		if r.err != nil {
			return errorf("reading section header: %v", r.err)
		}
		body := r.bytes(int(size))
		if r.err != nil {
			return errorf("section %d: %v", id, r.err)
		}
		if id != secCustom {
			rank, ok := order[id]
			if !ok {
				return errorf("unknown section %d", id)
			}
			if rank <= last {
				return errorf("section %d out of order", id)
			}
			last = rank
		}
		m.sections = append(m.sections, section{id, body})
	}
	for _, s := range m.sections {
		var err error
		switch s.id {
		case secType:
			err = m.parseTypes(s.body)
		case secImport:
			err = m.parseImports(s.body)
		case secFunction:
			err = m.parseFunctions(s.body)
		case secGlobal:
			r := &reader{b: s.body}
			m.globals += r.u32()
			err = r.err
		case secExport:
			m.hasExportSec = true
			err = m.checkExports(s.body)
		}
		if err != nil {
			return err
		}
	}
	m.refillIndex = m.funcImports
	m.fuelGlobal = m.globals
	m.refillType = uint32(len(m.types))
	m.addType = true
	for i, t := range m.types {
		if t == [2]int{0, 0} {
			m.refillType, m.addType = uint32(i), false
			break
		}
	}
	return nil
}

func (m *module) parseTypes(b []byte) error {
	r := &reader{b: b}
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		if form := r.byte(); form != 0x60 {
			return errorf("type section: form 0x%02x is not a function type", form)
		}
		params := r.u32()
		r.bytes(int(params))
		results := r.u32()
		r.bytes(int(results))
		m.types = append(m.types, [2]int{int(params), int(results)})
	}
	return r.wrap("type section")
}

func (m *module) parseImports(b []byte) error {
	r := &reader{b: b}
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		mod, name := r.name(), r.name()
		if mod == ImportModule && name == ImportRefill {
			return errorf("the module already imports %s.%s", mod, name)
		}
		switch kind := r.importDesc(); kind {
		case 0x00:
			m.funcImports++
		case 0x03:
			m.globals++
		}
	}
	return r.wrap("import section")
}

func (m *module) parseFunctions(b []byte) error {
	r := &reader{b: b}
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		t := r.u32()
		if int(t) >= len(m.types) {
			return errorf("function section: type index %d out of range", t)
		}
		m.funcTypes = append(m.funcTypes, t)
	}
	return r.wrap("function section")
}

func (m *module) checkExports(b []byte) error {
	r := &reader{b: b}
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		if r.name() == GlobalExport {
			return errorf("the module already exports %q", GlobalExport)
		}
		r.byte()
		r.u32()
	}
	return r.wrap("export section")
}

// fn renumbers a function index for the inserted import.
func (m *module) fn(idx uint32) uint32 {
	if idx >= m.funcImports {
		return idx + 1
	}
	return idx
}

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
	for _, s := range m.sections {
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
		if body == nil {
			continue // a malformed name section is dropped
		}
		out = appendSection(out, s.id, body)
	}
	if err := emitMissing(100); err != nil {
		return nil, err
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
	case secGlobal:
		g := []byte{0x7e, 0x01, 0x42, 0x00, 0x0b} // mut i64 = i64.const 0
		return m.rewriteGlobals(s.body, g)
	case secExport:
		return m.rewriteExports(s.body)
	case secStart:
		r := &reader{b: s.body}
		idx := r.u32()
		if err := r.wrap("start section"); err != nil {
			return nil, err
		}
		return appendU32(nil, m.fn(idx)), nil
	case secElement:
		return m.rewriteElements(s.body)
	case secCode:
		return m.rewriteCode(s.body)
	case secCustom:
		return m.rewriteCustom(s.body)
	}
	return s.body, nil
}

// appendToVector adds one entry at the end of a vector section.
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
		if r.importDesc() == 0x00 {
			funcs++
			if funcs == m.funcImports {
				insertAt = r.off
			}
		}
	}
	if err := r.wrap("import section"); err != nil {
		return nil, err
	}
	out := appendU32(nil, n+1)
	out = append(out, body[countEnd:insertAt]...)
	out = append(out, entry...)
	return append(out, body[insertAt:]...), nil
}

func (m *module) rewriteGlobals(body, entry []byte) ([]byte, error) {
	r := &reader{b: body}
	n := r.u32()
	out := appendU32(nil, n+1)
	for i := uint32(0); i < n && r.err == nil; i++ {
		out = append(out, r.byte(), r.byte())
		var err error
		if out, err = m.constExpr(r, out); err != nil {
			return nil, err
		}
	}
	if err := r.wrap("global section"); err != nil {
		return nil, err
	}
	return append(out, entry...), nil
}

func (m *module) rewriteExports(body []byte) ([]byte, error) {
	r := &reader{b: body}
	n := r.u32()
	out := appendU32(nil, n+1)
	for i := uint32(0); i < n && r.err == nil; i++ {
		out = appendName(out, r.name())
		kind := r.byte()
		idx := r.u32()
		if kind == 0x00 {
			idx = m.fn(idx)
		}
		out = appendU32(append(out, kind), idx)
	}
	if err := r.wrap("export section"); err != nil {
		return nil, err
	}
	out = appendName(out, GlobalExport)
	return appendU32(append(out, 0x03), m.fuelGlobal), nil
}

// constExpr copies a constant expression, renumbering ref.func.
func (m *module) constExpr(r *reader, out []byte) ([]byte, error) {
	for r.err == nil {
		start := r.off
		op := r.byte()
		switch op {
		case 0x0b:
			return append(out, op), nil
		case 0xd2:
			out = appendU32(append(out, op), m.fn(r.u32()))
			continue
		case 0x41, 0x42:
			r.leb()
		case 0x43:
			r.bytes(4)
		case 0x44:
			r.bytes(8)
		case 0x23:
			r.u32()
		case 0xd0:
			r.byte()
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e:
		case 0xfd:
			if r.u32() != 12 {
				return nil, errorf("unsupported constant instruction")
			}
			r.bytes(16)
		default:
			return nil, errorf("unsupported constant instruction 0x%02x", op)
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
				out = appendU32(out, m.fn(r.u32()))
			} else if out, err = m.constExpr(r, out); err != nil {
				return nil, err
			}
		}
	}
	if err := r.wrap("element section"); err != nil {
		return nil, err
	}
	return out, nil
}

// rewriteCustom renumbers the name section's function indices; other custom
// sections are copied. A name section it cannot read is dropped (nil): it
// only names things, and wazero's reader of a malformed one can run past
// its end into the sections that follow.
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
				np = appendU32(np, m.fn(p.u32()))
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
				return nil, nil
			}
			payload = np
		}
		out = appendSection(out, sub, payload)
	}
	if r.err != nil {
		return nil, nil
	}
	return out, nil
}
