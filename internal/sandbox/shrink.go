package sandbox

import (
	"reflect"

	"github.com/tetratelabs/wazero/api"
)

// Growth that pools: an instance whose call grew its memory (within its
// limit) is set back to its snapshot's size and reset, instead of closed
// and made again.

// wasmPage is WebAssembly's page size, the unit memory grows by.
const wasmPage = 65536

// shrink sets a grown pooled instance's memory back to its snapshot's
// size: its mapping gives back what the call grew (mmapMemory.shrink),
// then wazero's memory is told its size (setMemorySize). It reports false
// when either cannot be done; the instance must then be closed. The reset
// does the rest, as for an instance that did not grow.
func (p *instancePool) shrink(pi *pooledInstance) bool {
	size := len(pi.snap.memory)
	return pi.lin != nil && pi.lin.shrink(uint64(size)) && setMemorySize(pi.memory, uint32(size))
}

// setMemorySize makes a wazero memory size bytes long, fewer than it has
// (a whole number of pages, at least one), as memory.size and every bounds
// check see it. wazero has no way to shrink a memory, so this takes the
// one it has to set a length: its MemoryInstance's exported Buffer field
// is cut to a page less than size, and a grow of one page through the
// public API (Grow, which asks the instance's LinearMemory, then tells
// the compiled code the new base and length) brings it to size. It checks
// what it can and reports false when the memory is not the one it knows
// (wazero is pinned in go.mod; TestAGrownInstanceIsResetAndKept fails if
// an upgrade changes it), or when the grow fails.
func setMemorySize(mem api.Memory, size uint32) bool {
	v := reflect.ValueOf(mem)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return false
	}
	f := v.Elem().FieldByName("Buffer")
	if !f.IsValid() || !f.CanSet() || f.Type() != reflect.TypeFor[[]byte]() {
		return false
	}
	buf := f.Bytes()
	if size < wasmPage || size%wasmPage != 0 || uint64(size) >= uint64(len(buf)) {
		return false
	}
	f.SetBytes(buf[: size-wasmPage : size-wasmPage])
	_, ok := mem.Grow(1)
	return ok && mem.Size() == size
}
