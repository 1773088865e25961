package instrument

import (
	"errors"
	"fmt"
	"github.com/kindgi/packd/internal/wasmbin"
)

// Limits the pre-scan enforces beyond the binary format itself.
const (
	maxLocalsPerFunction = 50000   // as V8 and wasmtime
	maxTableEntries      = 1 << 20 // 8 MiB of references per table per instance
	// Instantiating a module sets up every global and element and data
	// segment before any of its code runs, where neither fuel nor the
	// deadline reach (a million globals took 0.2–1.5 s): these bound what
	// one instantiation costs. A Go module has 8 globals, 1 element
	// segment and 40,000 data segments (merged into runs by the pass).
	MaxGlobals         = 10000
	MaxElementSegments = 10000
	MaxDataSegments    = 100000
)

// ErrMalformed is wrapped by every Prescan error.
var ErrMalformed = errors.New("malformed module")

// Prescan walks the structure of a module binary (not its instructions) and
// checks that every declared count and length fits in the bytes that follow
// it. wazero's decoder allocates what a count declares before it reads the
// entries, so a few hostile bytes could otherwise make the host allocate
// gigabytes. It also bounds locals per function, table sizes, and the
// globals, element and data segments an instantiation sets up.
func Prescan(b []byte) error {
	r := &scanner{reader{wasmbin.Reader{B: b}}}
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return fmt.Errorf("%w: not a WebAssembly binary", ErrMalformed)
	}
	r.Off = 8
	for r.Off < len(r.B) {
		id := r.Byte()
		size := r.U32()
		if r.Err != nil {
			break
		}
		if uint64(size) > uint64(len(r.B)-r.Off) {
			return fmt.Errorf("%w: section %d is longer than the module", ErrMalformed, id)
		}
		sec := &scanner{reader{wasmbin.Reader{B: r.B[:r.Off+int(size)], Off: r.Off}}}
		sec.section(id)
		if sec.Err != nil {
			return fmt.Errorf("%w: section %d: %v", ErrMalformed, id, sec.Err)
		}
		r.Off += int(size)
	}
	if r.Err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, r.Err)
	}
	return nil
}

// scanner is a reader with the checks of the pre-scan.
type scanner struct{ reader }

// count reads a vector length and checks that at least min bytes per entry remain.
func (s *scanner) count(min int) int {
	n := s.U32()
	if uint64(n)*uint64(min) > uint64(len(s.B)-s.Off) {
		s.Fail("vector of %d entries is longer than its section", n)
		return 0
	}
	return int(n)
}

func (s *scanner) skip(n int) { s.Bytes(n) }

// bounded is n, or a failure when it is over max (what: the entries).
func (s *scanner) bounded(n, max int, what string) int {
	if n > max {
		s.Fail("%d %s, over the limit of %d a module may have", n, what, max)
		return 0
	}
	return n
}

func (s *scanner) name() { s.skip(s.count(1)) }

func (s *scanner) limits(maxMin uint64) {
	flags := s.Byte()
	min := s.Leb()
	if flags&1 != 0 {
		s.Leb()
	}
	if maxMin > 0 && min > maxMin {
		s.Fail("table of %d entries is over the limit of %d", min, maxMin)
	}
}

// expr skips a constant expression up to its `end`.
func (s *scanner) expr() {
	for s.Err == nil {
		switch op := s.Byte(); op {
		case 0x0b: // end
			return
		case 0x41, 0x42: // i32.const, i64.const
			s.Leb()
		case 0x43:
			s.skip(4)
		case 0x44:
			s.skip(8)
		case 0x23, 0xd2: // global.get, ref.func
			s.U32()
		case 0xd0: // ref.null
			s.Byte()
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended-const arithmetic
		case 0xfd: // v128.const
			if s.U32() != 12 {
				s.Fail("unsupported constant instruction")
			}
			s.skip(16)
		default:
			s.Fail("unsupported constant instruction 0x%02x", op)
		}
	}
}

func (s *scanner) section(id byte) {
	switch id {
	case 0: // custom
		s.customSection()
	case 1: // type
		for n := s.count(3); n > 0 && s.Err == nil; n-- {
			if s.Byte() != 0x60 {
				s.Fail("function type expected")
			}
			s.skip(s.count(1)) // params
			s.skip(s.count(1)) // results
		}
	case 2: // import
		for n := s.count(4); n > 0 && s.Err == nil; n-- {
			s.name()
			s.name()
			if s.Err == nil && s.Off < len(s.B) && s.B[s.Off] == 0x01 { // a table: bound its size
				s.Byte()
				s.Byte()
				s.limits(maxTableEntries)
				continue
			}
			s.ImportDesc(^uint32(0))
		}
	case 3: // function
		for n := s.count(1); n > 0 && s.Err == nil; n-- {
			s.U32()
		}
	case 4: // table
		for n := s.count(3); n > 0 && s.Err == nil; n-- {
			s.Byte()
			s.limits(maxTableEntries)
		}
	case 5: // memory
		for n := s.count(2); n > 0 && s.Err == nil; n-- {
			s.limits(0)
		}
	case 6: // global
		for n := s.bounded(s.count(3), MaxGlobals, "globals"); n > 0 && s.Err == nil; n-- {
			s.Byte()
			s.Byte()
			s.expr()
		}
	case 7: // export
		for n := s.count(3); n > 0 && s.Err == nil; n-- {
			s.name()
			s.Byte()
			s.U32()
		}
	case 8: // start
		s.U32()
	case 9: // element
		for n := s.bounded(s.count(2), MaxElementSegments, "element segments"); n > 0 && s.Err == nil; n-- {
			s.element()
		}
	case 10: // code
		for n := s.count(2); n > 0 && s.Err == nil; n-- {
			size := s.count(0)
			body := &scanner{reader{wasmbin.Reader{B: s.B[:min(s.Off+size, len(s.B))], Off: s.Off}}}
			locals := uint64(0)
			for g := body.count(2); g > 0 && body.Err == nil; g-- {
				locals += uint64(body.U32())
				body.Byte()
			}
			if locals > maxLocalsPerFunction {
				s.Fail("a function declares %d locals, over the limit of %d", locals, maxLocalsPerFunction)
			}
			if body.Err != nil {
				s.Fail("%v", body.Err)
			}
			s.skip(size)
		}
	case 11: // data
		for n := s.bounded(s.count(2), MaxDataSegments, "data segments"); n > 0 && s.Err == nil; n-- {
			switch flags := s.U32(); flags {
			case 0:
				s.expr()
			case 1:
			case 2:
				s.U32()
				s.expr()
			default:
				s.Fail("unknown data segment kind %d", flags)
			}
			s.skip(s.count(1))
		}
	case 12: // data count
		s.U32()
	case 13: // tag
		for n := s.count(2); n > 0 && s.Err == nil; n-- {
			s.Byte()
			s.U32()
		}
	default:
		s.Fail("unknown section")
	}
}

func (s *scanner) element() {
	flags := s.U32()
	if flags > 7 {
		s.Fail("unknown element segment kind %d", flags)
		return
	}
	if flags&2 != 0 && flags&1 == 0 { // explicit table index
		s.U32()
	}
	if flags&1 == 0 { // active: offset expression
		s.expr()
	}
	if flags&3 != 0 { // elemkind or reftype
		s.Byte()
	}
	if flags&4 == 0 {
		for n := s.count(1); n > 0 && s.Err == nil; n-- {
			s.U32()
		}
		return
	}
	for n := s.count(1); n > 0 && s.Err == nil; n-- {
		s.expr()
	}
}

// customSection bounds the "name" section, the only custom section wazero
// decodes; others are skipped.
func (s *scanner) customSection() {
	n := s.count(1)
	name := string(s.B[s.Off:min(s.Off+n, len(s.B))])
	s.skip(n)
	if name != "name" {
		s.Off = len(s.B)
		return
	}
	for s.Off < len(s.B) && s.Err == nil {
		sub := s.Byte()
		size := s.count(0)
		body := &scanner{reader{wasmbin.Reader{B: s.B[:min(s.Off+size, len(s.B))], Off: s.Off}}}
		s.skip(size)
		switch sub {
		case 0:
			body.name()
		case 1:
			for n := body.count(2); n > 0 && body.Err == nil; n-- {
				body.U32()
				body.name()
			}
		case 2:
			for n := body.count(2); n > 0 && body.Err == nil; n-- {
				body.U32()
				for m := body.count(2); m > 0 && body.Err == nil; m-- {
					body.U32()
					body.name()
				}
			}
		}
		// wazero reads these subsections without their sizes: one that
		// does not end where its size says would be read as something else.
		if sub <= 2 && body.Err == nil && !body.Done() {
			body.Fail("subsection %d is longer than its entries", sub)
		}
		if body.Err != nil {
			s.Fail("name section: %v", body.Err)
		}
	}
}
