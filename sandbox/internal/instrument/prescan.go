package instrument

import (
	"errors"
	"fmt"
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
	r := &scanner{reader{b: b}}
	if len(b) < 8 || string(b[:4]) != "\x00asm" {
		return fmt.Errorf("%w: not a WebAssembly binary", ErrMalformed)
	}
	r.off = 8
	for r.off < len(r.b) {
		id := r.byte()
		size := r.u32()
		if r.err != nil {
			break
		}
		if uint64(size) > uint64(len(r.b)-r.off) {
			return fmt.Errorf("%w: section %d is longer than the module", ErrMalformed, id)
		}
		sec := &scanner{reader{b: r.b[:r.off+int(size)], off: r.off}}
		sec.section(id)
		if sec.err != nil {
			return fmt.Errorf("%w: section %d: %v", ErrMalformed, id, sec.err)
		}
		r.off += int(size)
	}
	if r.err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, r.err)
	}
	return nil
}

// scanner is a reader with the checks of the pre-scan.
type scanner struct{ reader }

// count reads a vector length and checks that at least min bytes per entry remain.
func (s *scanner) count(min int) int {
	n := s.u32()
	if uint64(n)*uint64(min) > uint64(len(s.b)-s.off) {
		s.fail("vector of %d entries is longer than its section", n)
		return 0
	}
	return int(n)
}

func (s *scanner) skip(n int) { s.bytes(n) }

// bounded is n, or a failure when it is over max (what: the entries).
func (s *scanner) bounded(n, max int, what string) int {
	if n > max {
		s.fail("%d %s, over the limit of %d a module may have", n, what, max)
		return 0
	}
	return n
}

func (s *scanner) name() { s.skip(s.count(1)) }

func (s *scanner) limits(maxMin uint64) {
	flags := s.byte()
	min := s.leb()
	if flags&1 != 0 {
		s.leb()
	}
	if maxMin > 0 && min > maxMin {
		s.fail("table of %d entries is over the limit of %d", min, maxMin)
	}
}

// expr skips a constant expression up to its `end`.
func (s *scanner) expr() {
	for s.err == nil {
		switch op := s.byte(); op {
		case 0x0b: // end
			return
		case 0x41, 0x42: // i32.const, i64.const
			s.leb()
		case 0x43:
			s.skip(4)
		case 0x44:
			s.skip(8)
		case 0x23, 0xd2: // global.get, ref.func
			s.u32()
		case 0xd0: // ref.null
			s.byte()
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended-const arithmetic
		case 0xfd: // v128.const
			if s.u32() != 12 {
				s.fail("unsupported constant instruction")
			}
			s.skip(16)
		default:
			s.fail("unsupported constant instruction 0x%02x", op)
		}
	}
}

func (s *scanner) section(id byte) {
	switch id {
	case 0: // custom
		s.customSection()
	case 1: // type
		for n := s.count(3); n > 0 && s.err == nil; n-- {
			if s.byte() != 0x60 {
				s.fail("function type expected")
			}
			s.skip(s.count(1)) // params
			s.skip(s.count(1)) // results
		}
	case 2: // import
		for n := s.count(4); n > 0 && s.err == nil; n-- {
			s.name()
			s.name()
			if s.err == nil && s.off < len(s.b) && s.b[s.off] == 0x01 { // a table: bound its size
				s.byte()
				s.byte()
				s.limits(maxTableEntries)
				continue
			}
			s.importDesc(^uint32(0))
		}
	case 3: // function
		for n := s.count(1); n > 0 && s.err == nil; n-- {
			s.u32()
		}
	case 4: // table
		for n := s.count(3); n > 0 && s.err == nil; n-- {
			s.byte()
			s.limits(maxTableEntries)
		}
	case 5: // memory
		for n := s.count(2); n > 0 && s.err == nil; n-- {
			s.limits(0)
		}
	case 6: // global
		for n := s.bounded(s.count(3), MaxGlobals, "globals"); n > 0 && s.err == nil; n-- {
			s.byte()
			s.byte()
			s.expr()
		}
	case 7: // export
		for n := s.count(3); n > 0 && s.err == nil; n-- {
			s.name()
			s.byte()
			s.u32()
		}
	case 8: // start
		s.u32()
	case 9: // element
		for n := s.bounded(s.count(2), MaxElementSegments, "element segments"); n > 0 && s.err == nil; n-- {
			s.element()
		}
	case 10: // code
		for n := s.count(2); n > 0 && s.err == nil; n-- {
			size := s.count(0)
			body := &scanner{reader{b: s.b[:min(s.off+size, len(s.b))], off: s.off}}
			locals := uint64(0)
			for g := body.count(2); g > 0 && body.err == nil; g-- {
				locals += uint64(body.u32())
				body.byte()
			}
			if locals > maxLocalsPerFunction {
				s.fail("a function declares %d locals, over the limit of %d", locals, maxLocalsPerFunction)
			}
			if body.err != nil {
				s.fail("%v", body.err)
			}
			s.skip(size)
		}
	case 11: // data
		for n := s.bounded(s.count(2), MaxDataSegments, "data segments"); n > 0 && s.err == nil; n-- {
			switch flags := s.u32(); flags {
			case 0:
				s.expr()
			case 1:
			case 2:
				s.u32()
				s.expr()
			default:
				s.fail("unknown data segment kind %d", flags)
			}
			s.skip(s.count(1))
		}
	case 12: // data count
		s.u32()
	case 13: // tag
		for n := s.count(2); n > 0 && s.err == nil; n-- {
			s.byte()
			s.u32()
		}
	default:
		s.fail("unknown section")
	}
}

func (s *scanner) element() {
	flags := s.u32()
	if flags > 7 {
		s.fail("unknown element segment kind %d", flags)
		return
	}
	if flags&2 != 0 && flags&1 == 0 { // explicit table index
		s.u32()
	}
	if flags&1 == 0 { // active: offset expression
		s.expr()
	}
	if flags&3 != 0 { // elemkind or reftype
		s.byte()
	}
	if flags&4 == 0 {
		for n := s.count(1); n > 0 && s.err == nil; n-- {
			s.u32()
		}
		return
	}
	for n := s.count(1); n > 0 && s.err == nil; n-- {
		s.expr()
	}
}

// customSection bounds the "name" section, the only custom section wazero
// decodes; others are skipped.
func (s *scanner) customSection() {
	n := s.count(1)
	name := string(s.b[s.off:min(s.off+n, len(s.b))])
	s.skip(n)
	if name != "name" {
		s.off = len(s.b)
		return
	}
	for s.off < len(s.b) && s.err == nil {
		sub := s.byte()
		size := s.count(0)
		body := &scanner{reader{b: s.b[:min(s.off+size, len(s.b))], off: s.off}}
		s.skip(size)
		switch sub {
		case 0:
			body.name()
		case 1:
			for n := body.count(2); n > 0 && body.err == nil; n-- {
				body.u32()
				body.name()
			}
		case 2:
			for n := body.count(2); n > 0 && body.err == nil; n-- {
				body.u32()
				for m := body.count(2); m > 0 && body.err == nil; m-- {
					body.u32()
					body.name()
				}
			}
		}
		// wazero reads these subsections without their sizes: one that
		// does not end where its size says would be read as something else.
		if sub <= 2 && body.err == nil && !body.done() {
			body.fail("subsection %d is longer than its entries", sub)
		}
		if body.err != nil {
			s.fail("name section: %v", body.err)
		}
	}
}
