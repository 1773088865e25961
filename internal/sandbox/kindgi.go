package sandbox

import (
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/sandbox/internal/instrument"
)

// instantiateKindgi registers the guest ABI host module ("kindgi").
func instantiateKindgi(ctx context.Context, rt wazero.Runtime) error {
	i32 := api.ValueTypeI32
	b := rt.NewHostModuleBuilder(abi.ImportModule)
	b.NewFunctionBuilder().WithGoModuleFunction(charged(requestLen), nil, []api.ValueType{i32}).
		Export(abi.ImportRequestLen)
	b.NewFunctionBuilder().WithGoModuleFunction(charged(requestRead), []api.ValueType{i32}, nil).
		Export(abi.ImportRequestRead)
	b.NewFunctionBuilder().WithGoModuleFunction(charged(responseWrite), []api.ValueType{i32, i32}, nil).
		Export(abi.ImportResponseWrite)
	b.NewFunctionBuilder().WithGoModuleFunction(charged(logLine), []api.ValueType{i32, i32, i32}, nil).
		Export(abi.ImportLog)
	b.NewFunctionBuilder().WithGoModuleFunction(charged(httpRequest), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{api.ValueTypeI64}).
		Export(abi.ImportHTTPRequest)
	b.NewFunctionBuilder().WithGoModuleFunction(charged(httpResponseRead), []api.ValueType{i32, i32}, nil).
		Export(abi.ImportHTTPResponseRead)
	b.NewFunctionBuilder().WithGoModuleFunction(charged(jsonScan), []api.ValueType{i32, i32}, []api.ValueType{api.ValueTypeI64}).
		Export(abi.ImportJSONScan)
	b.NewFunctionBuilder().WithGoModuleFunction(charged(jsonMembers), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{api.ValueTypeI64}).
		Export(abi.ImportJSONMembers)
	b.NewFunctionBuilder().WithGoModuleFunction(charged(requestFields), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		Export(abi.ImportRequestFields)
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
	charge(ctx, mod, int64(len(st.request))>>copyShift)
	ptr := uint32(stack[0])
	if !mod.Memory().Write(ptr, st.request) {
		panic(&ABIError{Func: abi.ImportRequestRead, Reason: oob(ptr, uint32(len(st.request)), mod.Memory().Size())})
	}
}

func responseWrite(ctx context.Context, mod api.Module, stack []uint64) {
	st := stateFrom(ctx)
	ptr, n := uint32(stack[0]), uint32(stack[1])
	charge(ctx, mod, int64(n)>>copyShift)
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
	w := &st.stdout
	if level >= abi.LogWarn {
		w = &st.stderr
	}
	if !writeLines(ctx, mod, w, ptr, n) {
		panic(&ABIError{Func: abi.ImportLog, Reason: oob(ptr, n, mod.Memory().Size())})
	}
	w.Write([]byte{'\n'})
}
