//go:build wasip1

package guest

import (
	"unsafe"

	"github.com/kindgi/packd/abi/guest/wire"
)

//go:wasmimport kindgi request_len
func requestLen() int32

//go:wasmimport kindgi request_read
func requestRead(ptr unsafe.Pointer)

//go:wasmimport kindgi response_write
func responseWrite(ptr unsafe.Pointer, n int32)

//go:wasmimport kindgi log
func logImport(level int32, ptr unsafe.Pointer, n int32)

//go:wasmimport kindgi json_scan
func jsonScan(ptr unsafe.Pointer, n uint32) int64

//go:wasmimport kindgi json_members
//go:noescape
func jsonMembers(ptr unsafe.Pointer, n uint32, out unsafe.Pointer, capacity uint32) int64

//go:wasmimport kindgi request_fields
//go:noescape
func requestFieldsImport(out unsafe.Pointer, capacity uint32) int32

// membersIn is walkMembers, done by packd (json_members), natively: a
// decoder's members land in an array on its stack.
func membersIn(b []byte, out []member) (count, end int) {
	if len(b) == 0 || uint64(len(b)) > 1<<31-1 || uint64(len(out)) > 1<<26 {
		return walkMembers(b, out)
	}
	var o unsafe.Pointer
	if len(out) > 0 {
		o = unsafe.Pointer(&out[0])
	}
	r := jsonMembers(unsafe.Pointer(&b[0]), uint32(len(b)), o, uint32(len(out)))
	if r < 0 {
		return -1, 0
	}
	return int(uint32(r)), int(r >> 32)
}

// scanValue is scan, done by packd (json_scan): packd reads the value
// natively, at 16 units of fuel a byte, where the scanner here, a byte at
// a time through its functions' dispatch loops, costs hundreds (a 64 KiB
// echo of many small items: 1.1 ms, 37M fuel; a 20-byte value, 11,000).
func scanValue(b []byte, i int, space, escaped *bool) int {
	if i >= len(b) || uint64(len(b)-i) > 1<<32-1 {
		return scan(b, i, space, escaped)
	}
	r := jsonScan(unsafe.Pointer(&b[i]), uint32(len(b)-i))
	if r < 0 {
		return -1
	}
	*space = *space || r&(1<<32) != 0
	*escaped = *escaped || r&(1<<33) != 0
	return i + int(uint32(r))
}

// The SDK's own JSON work is done once in init, so that encoding/json's
// caches for its types are built there: with pooled instances (packd
// --pool-size) init runs once per snapshot instead of once per call, and a
// fresh instance would have built them in its call anyway.
func init() { prewarm() }

//go:wasmexport kindgi_abi_version
func abiVersion() int32 { return wire.GuestABIVersion }

//go:wasmexport kindgi_describe
func describe() int32 {
	write(Describe())
	return int32(wire.StatusOK)
}

// callMemory is what a call writes of the module's own memory besides
// its stack: its Context, then the start of its request, in one heap
// object, so that a call with a small request writes them on one page
// (each page a call writes is one a pooled instance's reset copies back).
type callMemory struct {
	ctx     Context
	request [4096]byte
}

// callMem is made once in init (a pooled instance's calls find it in the
// snapshot). requestBuf holds a call's request: callMem's, or larger when
// a request is. callContext is the Context a call's handler gets: one in
// the module, not one allocated per call (an instance serves one call at
// a time, and packd resets it before the next: GUEST-ABI.md, "Limits"),
// so that a call that allocates nothing writes no heap page of its own.
var (
	callMem     = new(callMemory)
	requestBuf  = callMem.request[:]
	callContext = &callMem.ctx
)

//go:wasmexport kindgi_call
func call() int32 {
	n := int(requestLen())
	if n > cap(requestBuf) {
		requestBuf = make([]byte, n)
	}
	req := requestBuf[:n]
	if len(req) > 0 {
		requestRead(unsafe.Pointer(&req[0]))
	}
	var f fields
	var status wire.Status
	var resp []byte
	// A packd that knows more fields writes these first (wire.RequestFields).
	if requestFieldsImport(unsafe.Pointer(&f[0]), uint32(len(f))) >= int32(len(f)) {
		status, resp = dispatch(req, &f, callContext, true)
	} else {
		status, resp = dispatch(req, nil, callContext, true)
	}
	if status != wire.StatusNoHandler {
		write(resp)
	}
	return int32(status)
}

func write(b []byte) {
	if len(b) == 0 {
		responseWrite(nil, 0)
		return
	}
	responseWrite(unsafe.Pointer(&b[0]), int32(len(b)))
}

// Log writes one line to packd's log at a level (wire.LogDebug … wire.LogError).
func Log(level int32, msg string) {
	if msg == "" {
		return
	}
	b := []byte(msg)
	logImport(level, unsafe.Pointer(&b[0]), int32(len(b)))
}
