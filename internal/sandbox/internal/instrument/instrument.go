// Package instrument rewrites a WebAssembly module once, at load, so that it
// meters its own execution with fuel (see ../../../../RATIONALE.md, "Why fuel by
// instrumentation").
//
// The pass adds a mutable i64 global, exported as GlobalExport, and an
// imported host function ImportModule.ImportRefill of type () -> (), appended
// after the module's own function imports (so every defined function's index
// moves up by one, and every reference to it is renumbered: call, ref.func,
// element segments, exports, start, the name section). Then:
//
//   - the body is cut into segments (segments.go), each entered only at its
//     start; as control enters one, its static cost (every instruction
//     counts 1) is subtracted from the global, and at a function's entry and
//     a loop's header, when the global is below zero, the refill import is
//     called;
//   - memory.fill, memory.copy, memory.init, table.fill, table.copy,
//     table.init and table.grow are charged by their length (BulkShift), and
//     memory.grow per page (GrowPageCost), before they run.
//
// Close active data segments are merged into runs (data.go): Go's linker
// writes tens of thousands, and wazero keeps a record of each in every
// instance. The memory an instance starts with is the same byte for byte.
//
// Within a segment control only moves forward, so each instruction runs at
// most once per charge: the fuel used is an upper bound of the instructions
// run, and the same call always burns the same fuel.
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
