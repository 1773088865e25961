package sandbox

import (
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/sandbox/internal/instrument"
)

// instantiateKindgi registers the guest ABI host module ("kindgi").
func instantiateKindgi(ctx context.Context, rt wazero.Runtime) error {
	i32 := api.ValueTypeI32
	b := rt.NewHostModuleBuilder(abi.ImportModule)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(requestLen), nil, []api.ValueType{i32}).
		Export(abi.ImportRequestLen)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(requestRead), []api.ValueType{i32}, nil).
		Export(abi.ImportRequestRead)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(responseWrite), []api.ValueType{i32, i32}, nil).
		Export(abi.ImportResponseWrite)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(logLine), []api.ValueType{i32, i32, i32}, nil).
		Export(abi.ImportLog)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(fuelRefill), nil, nil).
		Export(instrument.ImportRefill)
	_, err := b.Instantiate(ctx)
	return err
}

func requestLen(ctx context.Context, _ api.Module, stack []uint64) {
	stack[0] = uint64(len(stateFrom(ctx).request))
}

func requestRead(ctx context.Context, mod api.Module, stack []uint64) {
	st := stateFrom(ctx)
	ptr := uint32(stack[0])
	if !mod.Memory().Write(ptr, st.request) {
		panic(&ABIError{Func: abi.ImportRequestRead, Reason: oob(ptr, uint32(len(st.request)), mod.Memory().Size())})
	}
}

func responseWrite(ctx context.Context, mod api.Module, stack []uint64) {
	st := stateFrom(ctx)
	ptr, n := uint32(stack[0]), uint32(stack[1])
	if st.wrote {
		panic(&ABIError{Func: abi.ImportResponseWrite, Reason: "called twice in one call"})
	}
	if uint64(n) > uint64(st.maxResp) {
		panic(ErrOutputTooLarge)
	}
	st.response = append(st.response[:0], read(mod, abi.ImportResponseWrite, ptr, n)...)
	st.wrote = true
}

func logLine(ctx context.Context, mod api.Module, stack []uint64) {
	st := stateFrom(ctx)
	level, ptr, n := uint32(stack[0]), uint32(stack[1]), uint32(stack[2])
	msg := read(mod, abi.ImportLog, ptr, n)
	w := &st.stdout
	if level >= abi.LogWarn {
		w = &st.stderr
	}
	w.Write(msg)
	w.Write([]byte{'\n'})
}

// fuelRefill is called by instrumented code when its fuel counter is below
// zero. It stops the guest when the call's context is done (deadline,
// cancellation) or the budget is spent, and otherwise hands it more fuel,
// one slice at a time, so the guest returns to Go at least once a slice.
func fuelRefill(ctx context.Context, mod api.Module, _ []uint64) {
	if ctx.Err() != nil {
		panic(ErrCancelled) // classify reads the context for deadline or cancel
	}
	st := stateFrom(ctx)
	g, ok := mod.ExportedGlobal(instrument.GlobalExport).(api.MutableGlobal)
	if !ok {
		panic(&ABIError{Func: instrument.ImportRefill, Reason: "called by a module without its fuel counter"})
	}
	cur := int64(g.Get())
	for cur < 0 {
		if st.fuelLeft <= 0 {
			panic(ErrOutOfFuel)
		}
		n := min(st.fuelSlice, st.fuelLeft)
		st.fuelLeft -= n
		cur += n
	}
	g.Set(uint64(cur))
}
