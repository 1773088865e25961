package sandbox

import (
	"errors"
	"reflect"
	"sync"
	"unsafe"

	"github.com/tetratelabs/wazero"

	"github.com/kindgi/packd/internal/sandbox/internal/instrument"
)

// What packd reads and changes inside wazero, which exports no way to: the
// native code a module compiled into (sharedcode_linux.go), the decoded
// function bodies it keeps after compiling (dropBodies), and the data
// segments it writes into every instance it makes (removeData). wazero is pinned
// in go.mod, and every step checks the layout it expects: where wazero is
// laid out otherwise, the step reports errWazeroLayout and nothing is
// changed (and the tests that rely on it fail, so an upgrade cannot lose it
// unnoticed). setMemorySize (shrink.go) uses an exported field.

// unexported is v's field name, readable even when unexported; false when
// v is not a struct that has it.
func unexported(v reflect.Value, name string) (reflect.Value, bool) {
	if v.Kind() != reflect.Struct || !v.CanAddr() {
		return reflect.Value{}, false
	}
	f := v.FieldByName(name)
	if !f.IsValid() {
		return f, false
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem(), true
}

// follow follows names from v: through pointers and interfaces, field by
// field.
func follow(v reflect.Value, names ...string) (reflect.Value, bool) {
	for _, name := range names {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return v, false
			}
			v = v.Elem()
		}
		var ok bool
		if v, ok = unexported(v, name); !ok {
			return v, false
		}
	}
	return v, true
}

var errWazeroLayout = errors.New("wazero's compiled module is not laid out as this build knows")

// codeOf is the native code wazero compiled c into: its engine's
// compiledModules[ID].executable (wazero v1.12.0's layout; the tests fail
// when another version lays it out otherwise).
func codeOf(c wazero.CompiledModule) ([]byte, error) {
	cm := reflect.ValueOf(c)
	id, ok := follow(cm, "module", "ID")
	eng, ok2 := follow(cm, "compiledEngine")
	if !ok || !ok2 {
		return nil, errWazeroLayout
	}
	mux, ok := follow(eng, "mux")
	mods, ok2 := follow(eng, "compiledModules")
	if !ok || !ok2 || mux.Type() != reflect.TypeOf(sync.RWMutex{}) || mods.Kind() != reflect.Map || mods.Type().Key() != id.Type() {
		return nil, errWazeroLayout
	}
	lock := (*sync.RWMutex)(unsafe.Pointer(mux.UnsafeAddr()))
	lock.RLock()
	defer lock.RUnlock()
	entry := mods.MapIndex(id)
	if !entry.IsValid() {
		return nil, errors.New("wazero has no code for the module")
	}
	exe, ok := follow(entry, "compiledModule", "executables", "executable")
	if !ok || exe.Type() != reflect.TypeOf([]byte(nil)) {
		return nil, errWazeroLayout
	}
	code := exe.Bytes()
	if len(code) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(code)))%pageSize != 0 {
		return nil, errWazeroLayout
	}
	return code, nil
}

// dropBodies lets go of the function bodies (and their locals' types)
// wazero decoded from c's module: it copies them out of the module's bytes
// and keeps them for the module's life (2.9 MiB a Go echo module), but
// reads them only to validate and compile it, both done once c exists.
func dropBodies(c wazero.CompiledModule) error {
	code, ok := follow(reflect.ValueOf(c), "module", "CodeSection")
	if !ok || code.Kind() != reflect.Slice {
		return errWazeroLayout
	}
	for i := range code.Len() {
		body, ok := unexported(code.Index(i), "Body")
		locals, ok2 := unexported(code.Index(i), "LocalTypes")
		if !ok || !ok2 || body.Kind() != reflect.Slice || locals.Kind() != reflect.Slice {
			return errWazeroLayout
		}
		body.SetZero()
		locals.SetZero()
	}
	return nil
}

// dataRun is an active data segment: bytes written at off when an
// instance is made.
type dataRun struct {
	off  uint32
	init []byte
}

// removeData takes the data segments out of c's module, so that wazero
// writes none into the instances it makes, and returns them; false, and
// nothing changed, when the module has a start function (it runs inside
// instantiation, after the data is written), a data count section (it may
// name segments: memory.init, data.drop) or a segment that is passive or
// not at a constant i32 offset. Nothing may instantiate c meanwhile.
func removeData(c wazero.CompiledModule) ([]dataRun, bool) {
	cv := reflect.ValueOf(c)
	start, ok := follow(cv, "module", "StartSection")
	count, ok2 := follow(cv, "module", "DataCountSection")
	data, ok3 := follow(cv, "module", "DataSection")
	if !ok || !ok2 || !ok3 || start.Kind() != reflect.Pointer || !start.IsNil() || count.Kind() != reflect.Pointer || !count.IsNil() || data.Kind() != reflect.Slice {
		return nil, false
	}
	runs := make([]dataRun, 0, data.Len())
	for i := range data.Len() {
		seg := data.Index(i)
		passive, ok := unexported(seg, "Passive")
		init, ok2 := unexported(seg, "Init")
		expr, ok3 := follow(seg, "OffsetExpression", "Data")
		if !ok || !ok2 || !ok3 || passive.Kind() != reflect.Bool || passive.Bool() || init.Type() != reflect.TypeOf([]byte(nil)) || expr.Type() != reflect.TypeOf([]byte(nil)) {
			return nil, false
		}
		off, ok := instrument.ConstI32(expr.Bytes())
		if !ok {
			return nil, false
		}
		runs = append(runs, dataRun{off: off, init: init.Bytes()})
	}
	data.SetZero()
	return runs, true
}
