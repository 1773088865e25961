package sandbox

import (
	"errors"
	"reflect"
	"sync"
	"unsafe"

	"github.com/tetratelabs/wazero"
)

// What packd reads and changes inside wazero, which exports no way to: the
// native code a module compiled into (sharedcode_linux.go) and the decoded
// function bodies it keeps after compiling (dropBodies). wazero is pinned
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
