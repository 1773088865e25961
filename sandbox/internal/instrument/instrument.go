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
// Close active data segments are merged into runs (data.go): Go's linker
// writes tens of thousands, and wazero keeps a record of each in every
// instance. The memory an instance starts with is the same byte for byte.
//
// Within one function region control only moves forward, so each
// instruction runs at most once per charge: the fuel used is an upper bound
// of the instructions run, and the same call always burns the same fuel.
// Sections the pass does not need to change are copied byte for byte.
//
// The pass is also a gate: every index it reads (type, function, global,
// local, label) is checked against its space in the module as written, and
// every section it reads is read to its exact end, so no module that is
// invalid or malformed as written becomes valid by what the pass adds, and
// the fuel global and the refill import are unreachable from guest code.
// Every defined table's maximum is clamped (Options.MaxTableElements). The
// pass is linear in the module's size.
package instrument

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kindgi/packd/abi"
)

const (
	// ImportModule and ImportRefill name the host function the pass imports
	// (the names are the guest ABI's: abi).
	ImportModule = abi.ImportModule
	ImportRefill = abi.ImportFuelRefill
	// GlobalExport names the fuel counter the pass adds and exports.
	GlobalExport = abi.ExportFuel
	// StackExport names the stack counter the pass adds and exports: the
	// estimated bytes of the wasm frames open, which a function entry past
	// Options.MaxStackBytes turns into a trap (unreachable).
	StackExport = abi.ExportStack
	// DefaultMaxStackBytes is Options.MaxStackBytes when it is 0.
	DefaultMaxStackBytes = 8 << 20
	// frameBase and slotBytes estimate a function's frame: a fixed part and
	// 8 bytes per param, local and result.
	frameBase = 64
	slotBytes = 8
	// BulkShift: bulk memory and table operations cost length >> BulkShift.
	BulkShift = 3
	// GrowPageCost is charged per page a memory.grow asks for; it is
	// measured against the host's cost of growing (RATIONALE.md, "Why
	// memory.grow costs what it costs").
	GrowPageCost = 1 << 20
	// TableGrowCost is charged per element a table.grow asks for.
	TableGrowCost = 4
)

// Options tune the pass. The zero value clamps nothing.
type Options struct {
	// MaxTableElements bounds the elements of the tables a module defines,
	// all of them together: a module whose tables' minimums add up to more
	// is refused, and each defined table's maximum is lowered to its
	// minimum plus an equal share of what is left, so table.grow past it
	// returns -1 as the spec lets it. 0 leaves tables alone.
	MaxTableElements uint32
	// FunctionImportsOnly refuses imports of tables, memories, globals and
	// tags.
	FunctionImportsOnly bool
	// MaxStackBytes bounds the wasm stack of a call (estimated from the
	// frames of the functions open); 0 means DefaultMaxStackBytes.
	MaxStackBytes uint32
}

var (
	// ErrInstrument is wrapped by every error of the pass.
	ErrInstrument = errors.New("instrument")
	// ErrLimit is wrapped by the errors of modules that are valid but over
	// a limit of the pass (blocks and loops per function, table elements).
	ErrLimit = errors.New("over a limit")
	// errStrict: what the spec forbids and wazero allows (a constant
	// expression reading a mutable global, an overlong block type).
	errStrict = errors.New("invalid WebAssembly")
)

func errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInstrument, fmt.Sprintf(format, args...))
}

func limitf(format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", ErrInstrument, ErrLimit, fmt.Sprintf(format, args...))
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
	opt          Options
	sections     []section
	types        [][2]int // param and result counts per type
	funcTypes    []uint32 // type index per defined function
	funcImports  uint32
	globals      uint32 // imported + defined
	importedMut  []bool // per imported global: whether it is mutable
	info         Info
	refillType   uint32 // type index of () -> (), maybe appended
	addType      bool
	refillIndex  uint32 // the refill import's function index == funcImports
	fuelGlobal   uint32
	stackGlobal  uint32 // fuelGlobal + 1
	hasExportSec bool
}

// GlobalPrefix: the pass exports every mutable global of the module as
// GlobalPrefix followed by its index, so that the host can read and set
// the whole state of an instance (to snapshot and reset it).
const GlobalPrefix = abi.ExportGlobalPrefix

// Info is what the pass learnt of a module that resetting an instance of
// it needs.
type Info struct {
	// Globals are the indices of the module's mutable globals (exported as
	// GlobalPrefix+index), not counting the pass's own counters.
	Globals []uint32
	// WritesTablesOrSegments: the module can change a table or drop a
	// segment (table.set, grow, fill, copy, init; elem.drop; data.drop), so
	// an instance's memory and globals are not all of its state.
	WritesTablesOrSegments bool
	// RefGlobals: a mutable global holds a reference (funcref, externref),
	// whose value means something only in its own instance.
	RefGlobals bool
}

// Instrument returns the metered module.
func Instrument(wasm []byte, opt Options) ([]byte, error) {
	out, _, err := InstrumentInfo(wasm, opt)
	return out, err
}

// InstrumentInfo returns the metered module and what resetting an instance
// of it needs.
func InstrumentInfo(wasm []byte, opt Options) ([]byte, Info, error) {
	m := &module{opt: opt}
	if err := m.parse(wasm); err != nil {
		return nil, Info{}, err
	}
	out, err := m.emit()
	if err != nil {
		return nil, Info{}, err
	}
	return out, m.info, nil
}

// reservedExport reports names the pass exports itself.
func reservedExport(name string) bool {
	if name == GlobalExport || name == StackExport {
		return true
	}
	digits, ok := strings.CutPrefix(name, GlobalPrefix)
	if !ok || digits == "" {
		return false
	}
	_, err := strconv.ParseUint(digits, 10, 32)
	return err == nil
}

// funcs is the size of the function index space as written.
func (m *module) funcs() uint32 { return m.funcImports + uint32(len(m.funcTypes)) }

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
			err = r.wrap("global section")
		case secExport:
			m.hasExportSec = true
		case secData:
			err = m.checkData(s.body)
		}
		if err != nil {
			return err
		}
	}
	m.refillIndex = m.funcImports
	m.fuelGlobal = m.globals
	m.stackGlobal = m.globals + 1
	if m.opt.MaxStackBytes == 0 {
		m.opt.MaxStackBytes = DefaultMaxStackBytes
	}
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
		if form := r.byte(); r.err == nil && form != 0x60 {
			return errorf("type section: form 0x%02x is not a function type", form)
		}
		params := r.u32()
		r.bytes(int(params))
		results := r.u32()
		r.bytes(int(results))
		m.types = append(m.types, [2]int{int(params), int(results)})
	}
	return r.end("type section")
}

func (m *module) parseImports(b []byte) error {
	r := &reader{b: b}
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		mod, name := r.name(), r.name()
		if r.err == nil && mod == ImportModule && name == ImportRefill {
			return errorf("the module already imports %s.%s", mod, name)
		}
		kind := r.importDesc(uint32(len(m.types)))
		switch {
		case r.err != nil:
		case kind == 0x00:
			m.funcImports++
		case m.opt.FunctionImportsOnly:
			return errorf("import section: %s.%s is a %s; a module may import only functions", mod, name, kindName(kind))
		case kind == 0x03:
			typ, mut := r.b[r.off-2], r.b[r.off-1] != 0
			if mut {
				m.info.Globals = append(m.info.Globals, m.globals)
				m.info.RefGlobals = m.info.RefGlobals || typ == 0x70 || typ == 0x6f
			}
			m.globals++
			m.importedMut = append(m.importedMut, mut)
		}
	}
	return r.end("import section")
}

func kindName(kind byte) string {
	return [...]string{"function", "table", "memory", "global", "tag"}[kind]
}

func (m *module) parseFunctions(b []byte) error {
	r := &reader{b: b}
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		t := r.index("type", uint32(len(m.types)))
		m.funcTypes = append(m.funcTypes, t)
	}
	return r.end("function section")
}

// checkData reads the data section for its offset expressions, which the
// pass does not change but which must be constant as written.
func (m *module) checkData(b []byte) error {
	r := &reader{b: b}
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		switch flags := r.u32(); {
		case r.err != nil:
		case flags == 1:
		case flags == 0 || flags == 2:
			if flags == 2 {
				r.u32()
			}
			if _, err := m.constExpr(r, nil); err != nil {
				return err
			}
		default:
			return errorf("data section: unknown segment kind %d", flags)
		}
		r.bytes(int(r.u32()))
	}
	return r.end("data section")
}

// fn renumbers a function index (checked in range) for the inserted import.
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
