package instrument

import (
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

// TestBulkChunksKeepTheirMeaning: memory.fill, memory.copy (overlapping
// both ways) and memory.init longer than a chunk leave memory byte for
// byte as the module as written does, and trap where it traps; with
// chunks of 256 KiB and of 16 bytes (which crosses chunks in a short data
// segment). Every chunk looks at the deadline: the refill is called once a
// chunk even though the counter never runs out.
func TestBulkChunksKeepTheirMeaning(t *testing.T) {
	wasm := readFixture(t, "instrument", "bulkchunks")
	defer func(c int64) { chunkBytes = c }(chunkBytes)
	for _, chunk := range []int64{BulkChunk, 16} {
		chunkBytes = chunk
		metered, err := Instrument(wasm, Options{})
		if err != nil {
			t.Fatal(err)
		}
		refills := 0
		ctx, rt := runtimeWithHosts(t, &refills)
		orig, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := rt.CompileModule(ctx, metered)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"fill", "copyup", "copydown", "copyexact", "fillpast", "copypast", "init", "initpast"} {
			run := func(c wazero.CompiledModule) (uint64, string) {
				m, err := rt.InstantiateModule(ctx, c, wazero.NewModuleConfig().WithName(""))
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close(ctx)
				if g, ok := m.ExportedGlobal(GlobalExport).(interface{ Set(uint64) }); ok {
					g.Set(1 << 40) // never runs out: refills only look at the deadline
				}
				res, err := m.ExportedFunction(name).Call(ctx)
				if err != nil {
					msg := err.Error()
					return 0, msg[:strings.IndexByte(msg+"\n", '\n')]
				}
				return res[0], ""
			}
			before := refills
			want, wantErr := run(orig)
			got, gotErr := run(inst)
			if got != want || gotErr != wantErr {
				t.Errorf("chunk %d, %s: instrumented %#x %q, as written %#x %q", chunk, name, got, gotErr, want, wantErr)
			}
			if name == "fill" && refills-before < int((1000003-1)/chunk) {
				t.Errorf("chunk %d: a fill of 1000003 bytes looked at the deadline %d times", chunk, refills-before)
			}
		}
	}
}
