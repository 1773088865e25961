package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// wasiModule is the WASI preview 1 module name guests import.
const wasiModule = "wasi_snapshot_preview1"

// WASI errno values used here.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
	errnoNosys   = 52
	errnoSpipe   = 70
)

// instantiateWASI registers the minimal WASI: what guest toolchains need to
// start and print, and nothing that reaches the host's files, sockets or
// environment. Every other preview 1 function exists (so any toolchain's
// imports resolve) and answers ENOSYS or EBADF.
func instantiateWASI(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(wasiModule)
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	ret := []api.ValueType{i32}
	fn := func(name string, f api.GoModuleFunc, params ...api.ValueType) {
		b.NewFunctionBuilder().WithGoModuleFunction(charged(f), params, ret).Export(name)
	}
	fn("args_get", noArgs, i32, i32)
	fn("args_sizes_get", zeroSizes, i32, i32)
	fn("environ_get", environGet, i32, i32)
	fn("environ_sizes_get", environSizesGet, i32, i32)
	fn("clock_res_get", clockResGet, i32, i32)
	fn("clock_time_get", clockTimeGet, i32, i64, i32)
	fn("fd_write", fdWrite, i32, i32, i32, i32)
	fn("fd_read", fdRead, i32, i32, i32, i32)
	fn("fd_close", stdioOnly(errnoSuccess), i32)
	fn("fd_fdstat_get", fdFdstatGet, i32, i32)
	fn("fd_seek", stdioOnly(errnoSpipe), i32, i64, i32, i32)
	fn("fd_prestat_get", errno(errnoBadf), i32, i32)
	fn("fd_prestat_dir_name", errno(errnoBadf), i32, i32, i32)
	fn("poll_oneoff", pollOneoff, i32, i32, i32, i32)
	fn("random_get", randomGet, i32, i32)
	fn("sched_yield", errno(errnoSuccess))
	fn("proc_raise", errno(errnoNosys), i32)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(procExit), []api.ValueType{i32}, nil).
		Export("proc_exit")

	// Files, directories and sockets do not exist for a guest.
	for name, params := range map[string][]api.ValueType{
		"fd_advise":               {i32, i64, i64, i32},
		"fd_allocate":             {i32, i64, i64},
		"fd_datasync":             {i32},
		"fd_fdstat_set_flags":     {i32, i32},
		"fd_fdstat_set_rights":    {i32, i64, i64},
		"fd_filestat_get":         {i32, i32},
		"fd_filestat_set_size":    {i32, i64},
		"fd_filestat_set_times":   {i32, i64, i64, i32},
		"fd_pread":                {i32, i32, i32, i64, i32},
		"fd_pwrite":               {i32, i32, i32, i64, i32},
		"fd_readdir":              {i32, i32, i32, i64, i32},
		"fd_renumber":             {i32, i32},
		"fd_sync":                 {i32},
		"fd_tell":                 {i32, i32},
		"path_create_directory":   {i32, i32, i32},
		"path_filestat_get":       {i32, i32, i32, i32, i32},
		"path_filestat_set_times": {i32, i32, i32, i32, i64, i64, i32},
		"path_link":               {i32, i32, i32, i32, i32, i32, i32},
		"path_open":               {i32, i32, i32, i32, i32, i64, i64, i32, i32},
		"path_readlink":           {i32, i32, i32, i32, i32, i32},
		"path_remove_directory":   {i32, i32, i32},
		"path_rename":             {i32, i32, i32, i32, i32, i32},
		"path_symlink":            {i32, i32, i32, i32, i32},
		"path_unlink_file":        {i32, i32, i32},
		"sock_accept":             {i32, i32, i32},
		"sock_recv":               {i32, i32, i32, i32, i32, i32},
		"sock_send":               {i32, i32, i32, i32, i32},
		"sock_shutdown":           {i32, i32},
	} {
		fn(name, errno(errnoNosys), params...)
	}
	_, err := b.Instantiate(ctx)
	return err
}

func errno(code uint64) api.GoModuleFunc {
	return func(_ context.Context, _ api.Module, stack []uint64) { stack[0] = code }
}

// stdioOnly answers code for fds 0–2 and EBADF for any other.
func stdioOnly(code uint64) api.GoModuleFunc {
	return func(_ context.Context, _ api.Module, stack []uint64) {
		if uint32(stack[0]) <= 2 {
			stack[0] = code
		} else {
			stack[0] = errnoBadf
		}
	}
}

func put32(mod api.Module, ptr, v uint32) bool { return mod.Memory().WriteUint32Le(ptr, v) }

func noArgs(_ context.Context, _ api.Module, stack []uint64) { stack[0] = errnoSuccess }

func zeroSizes(_ context.Context, mod api.Module, stack []uint64) {
	if !put32(mod, uint32(stack[0]), 0) || !put32(mod, uint32(stack[1]), 0) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

func environSizesGet(ctx context.Context, mod api.Module, stack []uint64) {
	env := stateFrom(ctx).env
	size := 0
	for _, kv := range env {
		size += len(kv) + 1
	}
	if !put32(mod, uint32(stack[0]), uint32(len(env))) || !put32(mod, uint32(stack[1]), uint32(size)) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

func environGet(ctx context.Context, mod api.Module, stack []uint64) {
	env := stateFrom(ctx).env
	ptrs, buf := uint32(stack[0]), uint32(stack[1])
	for i, kv := range env {
		if !put32(mod, ptrs+uint32(i)*4, buf) ||
			!mod.Memory().Write(buf, append([]byte(kv), 0)) {
			stack[0] = errnoFault
			return
		}
		buf += uint32(len(kv)) + 1
	}
	stack[0] = errnoSuccess
}

func clockResGet(_ context.Context, mod api.Module, stack []uint64) {
	if id := uint32(stack[0]); id > 1 {
		stack[0] = errnoInval
		return
	}
	if !mod.Memory().WriteUint64Le(uint32(stack[1]), 1) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

func now(id uint32) (int64, bool) {
	switch id {
	case 0: // realtime
		return time.Now().UnixNano(), true
	case 1: // monotonic
		return int64(monotonic()), true
	}
	return 0, false
}

func clockTimeGet(ctx context.Context, mod api.Module, stack []uint64) {
	id := uint32(stack[0])
	if id > 1 {
		stack[0] = errnoInval
		return
	}
	b, ok := mod.Memory().Read(uint32(stack[2]), 8)
	if !ok {
		stack[0] = errnoFault
		return
	}
	stateFrom(ctx).taped("clock_time_get", uint64(id), b, func() {
		t, _ := now(id)
		binary.LittleEndian.PutUint64(b, uint64(t))
	})
	stack[0] = errnoSuccess
}

func fdWrite(ctx context.Context, mod api.Module, stack []uint64) {
	fd, iovs, n, nwritten := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	st := stateFrom(ctx)
	var w *lineWriter
	switch fd {
	case 1:
		w = &st.stdout
	case 2:
		w = &st.stderr
	default:
		stack[0] = errnoBadf
		return
	}
	if n > maxIovecs {
		stack[0] = errnoInval
		return
	}
	charge(ctx, mod, int64(n)*iovecBytes>>copyShift)
	vecs, ok := mod.Memory().Read(iovs, n*iovecBytes)
	if !ok {
		stack[0] = errnoFault
		return
	}
	total := uint32(0)
	for i := uint32(0); i < n; i++ {
		ptr := binary.LittleEndian.Uint32(vecs[i*8:])
		l := binary.LittleEndian.Uint32(vecs[i*8+4:])
		if !writeLines(ctx, mod, w, ptr, l) {
			stack[0] = errnoFault
			return
		}
		total += l
	}
	if !put32(mod, nwritten, total) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

// fdRead: stdin is always empty; other descriptors do not exist.
func fdRead(_ context.Context, mod api.Module, stack []uint64) {
	if uint32(stack[0]) != 0 {
		stack[0] = errnoBadf
		return
	}
	if !put32(mod, uint32(stack[3]), 0) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

func fdFdstatGet(_ context.Context, mod api.Module, stack []uint64) {
	fd, ptr := uint32(stack[0]), uint32(stack[1])
	if fd > 2 {
		stack[0] = errnoBadf
		return
	}
	var stat [24]byte
	stat[0] = 2 // character device
	binary.LittleEndian.PutUint64(stat[8:], ^uint64(0))
	if !mod.Memory().Write(ptr, stat[:]) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

// randomGet fills guest memory with random bytes, a chunk at a time, each
// paid for before it is filled.
func randomGet(ctx context.Context, mod api.Module, stack []uint64) {
	b, ok := mod.Memory().Read(uint32(stack[0]), uint32(stack[1]))
	if !ok {
		stack[0] = errnoFault
		return
	}
	st := stateFrom(ctx)
	for len(b) > 0 {
		c := min(len(b), hostChunk)
		charge(ctx, mod, int64(c)*randomCost)
		chunk := b[:c]
		st.taped("random_get", uint64(c), chunk, func() { _, _ = rand.Read(chunk) })
		b = b[c:]
	}
	stack[0] = errnoSuccess
}

// pollOneoff supports clock subscriptions (sleep) and fd readiness on stdio.
// A sleep ends early when the call's context is done, and then the guest stops.
func pollOneoff(ctx context.Context, mod api.Module, stack []uint64) {
	in, out, nsub, neventsPtr := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	charge(ctx, mod, int64(nsub)*(pollSubBytes+pollEventSize)>>copyShift)
	if nsub == 0 || nsub > 1024 {
		stack[0] = errnoInval
		return
	}
	subs, ok1 := mod.Memory().Read(in, nsub*pollSubBytes)
	events, ok2 := mod.Memory().Read(out, nsub*pollEventSize)
	if !ok1 || !ok2 {
		stack[0] = errnoFault
		return
	}
	// The answer (the events, then their count) is a host answer: live,
	// the subscriptions are waited for; replayed, the recording's come at
	// once. Only a taped call's answer goes through a buffer of its own.
	st := stateFrom(ctx)
	look(st) // a wait does not begin past the deadline
	var n uint32
	if st.record == nil && st.replay == nil {
		n = poll(ctx, subs, nsub, events)
	} else {
		answer := make([]byte, nsub*pollEventSize+4)
		st.taped("poll_oneoff", uint64(nsub), answer, func() {
			binary.LittleEndian.PutUint32(answer[nsub*pollEventSize:], poll(ctx, subs, nsub, answer))
		})
		n = min(binary.LittleEndian.Uint32(answer[nsub*pollEventSize:]), nsub)
		copy(events, answer[:n*pollEventSize])
	}
	if !put32(mod, neventsPtr, n) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

// poll waits for the subscriptions, writes into events what happened
// (pollEventSize bytes each, at most nsub) and returns how many did.
func poll(ctx context.Context, subs []byte, nsub uint32, events []byte) uint32 {
	type ev struct {
		userdata uint64
		errno    uint16
		typ      byte
	}
	var ready []ev
	var clocks []ev
	sleep := time.Duration(-1)
	for i := uint32(0); i < nsub; i++ {
		s := subs[i*48:]
		e := ev{userdata: binary.LittleEndian.Uint64(s), typ: s[8]}
		switch e.typ {
		case 0: // clock
			id := binary.LittleEndian.Uint32(s[16:])
			timeout := int64(binary.LittleEndian.Uint64(s[24:]))
			if binary.LittleEndian.Uint16(s[40:])&1 != 0 { // absolute time
				t, ok := now(id)
				if !ok {
					e.errno = errnoInval
					ready = append(ready, e)
					continue
				}
				timeout -= t
			}
			d := time.Duration(max(timeout, 0))
			if sleep < 0 || d < sleep {
				sleep = d
			}
			clocks = append(clocks, e)
		case 1, 2: // fd_read, fd_write
			fd := binary.LittleEndian.Uint32(s[16:])
			if fd > 2 {
				e.errno = errnoBadf
			}
			ready = append(ready, e)
		default:
			e.errno = errnoInval
			ready = append(ready, e)
		}
	}
	if len(ready) == 0 && sleep >= 0 {
		if sleep > 0 {
			// A sleep past the call's deadline wakes at it, by the clock.
			st := stateFrom(ctx)
			cut := st.hasDeadline && time.Until(st.deadline) < sleep
			if cut {
				sleep = max(time.Until(st.deadline), 0)
			}
			t := time.NewTimer(sleep)
			slept := time.Now()
			select {
			case <-t.C:
				st.waited += time.Since(slept)
				if cut {
					stopForDeadline()
				}
			case <-ctx.Done():
				st.waited += time.Since(slept)
				t.Stop()
				stopForContext()
			}
		}
		ready = clocks
	}
	for i, e := range ready {
		o := events[i*pollEventSize : (i+1)*pollEventSize]
		clear(o)
		binary.LittleEndian.PutUint64(o, e.userdata)
		binary.LittleEndian.PutUint16(o[8:], e.errno)
		o[10] = e.typ
	}
	return uint32(len(ready))
}

func procExit(_ context.Context, _ api.Module, stack []uint64) {
	panic(sys.NewExitError(uint32(stack[0])))
}
