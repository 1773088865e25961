package sandbox_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/sandbox"
	"github.com/kindgi/packd/internal/wasmbin"
)

func compileErr(t *testing.T, sb *sandbox.Sandbox, wasm []byte) error {
	t.Helper()
	m, err := sb.Compile(context.Background(), wasm)
	if err == nil {
		_ = m.Close(context.Background())
	}
	return err
}

// TestInvalidModulesAreRefused: modules that are invalid as written because
// an index names one past the end of its space (where the fuel pass adds
// its counter global, its () -> () type, its local) are refused, not made
// valid by what the pass adds. fuelwrite ran on main with its own fuel.
func TestInvalidModulesAreRefused(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{})
	for _, name := range []string{"fuelwrite", "fuelexport", "fuelunreachable", "importtype", "localtmp", "calltype"} {
		t.Run(name, func(t *testing.T) {
			wasm, err := os.ReadFile(hostile(name))
			if err != nil {
				t.Fatal(err)
			}
			if err := compileErr(t, sb, wasm); !errors.Is(err, sandbox.ErrInvalidModule) {
				t.Fatalf("got %v, want ErrInvalidModule", err)
			}
		})
	}
}

// TestModulesThatPanicWazeroAreRefused: wazero's validator panics on a call
// to a function whose declared type is out of range (found by
// FuzzInstrument); compiled in packd's goroutine that would end the process.
func TestModulesThatPanicWazeroAreRefused(t *testing.T) {
	wasm := []byte("\x00asm\x01\x00\x00\x00\x01\t\x02`\x00\x00`\x01\x7f\x01\x7f\x03\x03\x02\x000\n\x12\x02\v\x00A0A0\x10\x01000\v\x04\x0000\v")
	if err := compileErr(t, newSandbox(t, sandbox.Config{}), wasm); !errors.Is(err, sandbox.ErrInvalidModule) {
		t.Fatalf("got %v", err)
	}
}

func TestLoopWithResultRuns(t *testing.T) {
	m := compile(t, newSandbox(t, sandbox.Config{}), hostile("loopresult"))
	rep, err, _ := call(t, m, 10*time.Second)
	if err != nil || string(rep.Body) != `{"ok":true}` {
		t.Fatalf("%s %v", rep.Body, err)
	}
}

// TestTableGrowIsClamped: a guest asking for 52 MiB and then 32 GiB of
// table gets -1 past the table limit (on main the process died of it).
func TestTableGrowIsClamped(t *testing.T) {
	for _, limit := range []uint32{0, 1000} { // the default, and a small one
		sb := newSandbox(t, sandbox.Config{MaxTableElements: limit})
		m := compile(t, sb, hostile("tablegrow"))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		rep, err := m.Call(ctx, sandbox.Request{Body: []byte(`{}`), CallLimits: sandbox.CallLimits{Fuel: sandbox.MaxFuel}})
		cancel()
		if err != nil || rep.Status != abi.StatusOK || string(rep.Body) != `{}` {
			t.Fatalf("limit %d: %d %s %v", limit, rep.Status, rep.Body, err)
		}
		// Under the default budget a grow by 0xfffffff0 is out of fuel
		// before it runs.
		rep, err = callFuel(t, m, 0, time.Minute)
		if !errors.Is(err, sandbox.ErrOutOfFuel) {
			t.Fatalf("limit %d, default fuel: %v", limit, err)
		}
	}
	if _, err := sandbox.New(context.Background(), sandbox.Config{MemoryLimitPages: 16, MaxTableElements: 1 << 20}); err == nil {
		t.Error("tables larger than the memory limit were accepted")
	}
}

// TestLoadTimeCodeIsBounded: a start function, or a kindgi_describe, that
// sleeps or spins is stopped by the load limits and reported as such (on
// main a sleeping describe hung the load for ever).
func TestLoadTimeCodeIsBounded(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{LoadTimeout: 300 * time.Millisecond, LoadFuel: 50_000_000})
	for _, c := range []struct{ name, says string }{
		{"describesleep", "load timeout of 300ms"},
		{"describespin", "load fuel of 50000000"},
		{"startspin", "load fuel of 50000000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := compile(t, sb, hostile(c.name))
			done := make(chan error, 1)
			go func() { _, err := m.Describe(context.Background()); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, sandbox.ErrLoadLimit) || !strings.Contains(err.Error(), c.says) {
					t.Fatalf("got %v, want ErrLoadLimit saying %q", err, c.says)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Describe did not return")
			}
		})
	}
	// The defaults bound it too.
	m := compile(t, newSandbox(t, sandbox.Config{}), hostile("describespin"))
	if _, err := m.Describe(context.Background()); !errors.Is(err, sandbox.ErrLoadLimit) {
		t.Fatalf("default load limits: %v", err)
	}
}

// loopsModule is a module of one function holding n loops, nested or not.
func loopsModule(n int, op byte, nested bool) []byte {
	var code []byte
	for i := 0; i < n; i++ {
		code = append(code, op, 0x40)
		if !nested {
			code = append(code, 0x0b)
		}
	}
	if nested {
		for i := 0; i < n; i++ {
			code = append(code, 0x0b)
		}
	}
	body := append(append([]byte{0}, code...), 0x0b)
	fn := append(wasmbin.AppendU32(nil, uint32(len(body))), body...)
	codeSec := append([]byte{1}, fn...)
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = append(out, 1, 4, 1, 0x60, 0, 0) // type () -> ()
	out = append(out, 3, 2, 1, 0)          // one function
	out = append(wasmbin.AppendU32(append(out, 10), uint32(len(codeSec))), codeSec...)
	return out
}

// TestCompileIsBounded: modules whose compilation would take minutes are
// refused in milliseconds (on main 8,000 loops took a minute to compile),
// a module over the size limit is refused before it is read, and a
// compilation over its timeout gives up.
func TestCompileIsBounded(t *testing.T) {
	sb := newSandbox(t, sandbox.Config{CacheDir: t.TempDir()})
	for name, wasm := range map[string][]byte{
		"8,000 loops":           loopsModule(8000, 0x03, false),
		"8,000 nested loops":    loopsModule(8000, 0x03, true),
		"100,000 nested blocks": loopsModule(100_000, 0x02, true),
	} {
		start := time.Now()
		err := compileErr(t, sb, wasm)
		if !errors.Is(err, sandbox.ErrInvalidModule) {
			t.Errorf("%s: got %v", name, err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: refused after %v", name, d)
		}
	}
	if err := compileErr(t, sb, loopsModule(500, 0x03, false)); err != nil {
		t.Errorf("500 loops: %v", err)
	}

	small := newSandbox(t, sandbox.Config{MaxModuleBytes: 1000})
	if err := compileErr(t, small, loopsModule(1000, 0x02, false)); !errors.Is(err, sandbox.ErrInvalidModule) || !strings.Contains(err.Error(), "over the limit of 1000") {
		t.Errorf("a module over the size limit: %v", err)
	}

	hasty := newSandbox(t, sandbox.Config{CompileTimeout: time.Nanosecond, CacheDir: t.TempDir()})
	if err := compileErr(t, hasty, loopsModule(1000, 0x03, false)); !errors.Is(err, sandbox.ErrCompileTimeout) {
		t.Errorf("a compilation over its timeout: %v", err)
	}
}

// TestMemoryGrowPaysItsHostCost: growing memory costs the host about a
// fuel slice's worth of time per page (RATIONALE.md, measured by
// BenchmarkFuelPace), so a page costs at least a slice; on main it cost
// 1024 units, and a slice of one-page grows took ~300 times its time.
func TestMemoryGrowPaysItsHostCost(t *testing.T) {
	m := compile(t, newSandbox(t, sandbox.Config{MemoryLimitPages: 64}), hostile("grow"))
	rep, err := callFuel(t, m, 0, time.Minute)
	var trap *sandbox.TrapError
	if !errors.As(err, &trap) { // it writes past its memory at the end
		t.Fatalf("%v", err)
	}
	// 64 pages less 8 for tables (an eighth of the limit), less the first
	if pages := int64(64 - 8 - 1); rep.FuelUsed < pages*sandbox.DefaultFuelSlice {
		t.Fatalf("growing %d pages cost %d fuel", pages, rep.FuelUsed)
	}
}
