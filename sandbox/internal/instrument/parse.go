package instrument

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
