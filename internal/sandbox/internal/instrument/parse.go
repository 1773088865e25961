package instrument

import "github.com/kindgi/packd/internal/wasmbin"

func (m *module) parse(wasm []byte) error {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" || string(wasm[4:8]) != "\x01\x00\x00\x00" {
		return errorf("not a WebAssembly 1.0 binary")
	}
	r := &reader{wasmbin.Reader{B: wasm, Off: 8}}
	last := 0
	for !r.Done() {
		id := r.Byte()
		size := r.U32()
		if r.Err != nil {
			return errorf("reading section header: %v", r.Err)
		}
		body := r.Bytes(int(size))
		if r.Err != nil {
			return errorf("section %d: %v", id, r.Err)
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
			r := &reader{wasmbin.Reader{B: s.body}}
			m.globals += r.U32()
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
	r := &reader{wasmbin.Reader{B: b}}
	for n := r.U32(); n > 0 && r.Err == nil; n-- {
		if form := r.Byte(); r.Err == nil && form != 0x60 {
			return errorf("type section: form 0x%02x is not a function type", form)
		}
		params := r.U32()
		r.Bytes(int(params))
		results := r.U32()
		r.Bytes(int(results))
		m.types = append(m.types, [2]int{int(params), int(results)})
	}
	return r.end("type section")
}

func (m *module) parseImports(b []byte) error {
	r := &reader{wasmbin.Reader{B: b}}
	for n := r.U32(); n > 0 && r.Err == nil; n-- {
		mod, name := r.Name(), r.Name()
		if r.Err == nil && mod == ImportModule && name == ImportRefill {
			return errorf("the module already imports %s.%s", mod, name)
		}
		kind := r.ImportDesc(uint32(len(m.types)))
		switch {
		case r.Err != nil:
		case kind == 0x00:
			m.funcImports++
		case m.opt.FunctionImportsOnly:
			return errorf("import section: %s.%s is a %s; a module may import only functions", mod, name, kindName(kind))
		case kind == 0x03:
			typ, mut := r.B[r.Off-2], r.B[r.Off-1] != 0
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
	r := &reader{wasmbin.Reader{B: b}}
	for n := r.U32(); n > 0 && r.Err == nil; n-- {
		t := r.Index("type", uint32(len(m.types)))
		m.funcTypes = append(m.funcTypes, t)
	}
	return r.end("function section")
}

// checkData reads the data section for its offset expressions, which the
// pass does not change but which must be constant as written.
func (m *module) checkData(b []byte) error {
	r := &reader{wasmbin.Reader{B: b}}
	for n := r.U32(); n > 0 && r.Err == nil; n-- {
		switch flags := r.U32(); {
		case r.Err != nil:
		case flags == 1:
		case flags == 0 || flags == 2:
			if flags == 2 {
				r.U32()
			}
			if _, err := m.constExpr(r, nil); err != nil {
				return err
			}
		default:
			return errorf("data section: unknown segment kind %d", flags)
		}
		r.Bytes(int(r.U32()))
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
