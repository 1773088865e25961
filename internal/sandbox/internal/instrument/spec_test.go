//go:build spectest

package instrument

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// The official WebAssembly spec testsuite through the pass (make spectest,
// part of make test). wazero's module ships the suite converted by
// wast2json; every command of every file runs in three runtimes side by
// side: "plain" runs the modules as written, "metered" runs them through
// the pass with ample fuel, and "tiny" runs them through the pass with a
// budget of tinyBudget per call.
//
//   - module: the pass accepts it, and the plain and metered instantiations
//     agree; the metered module passes wasm-validate when it is installed.
//   - assert_return, action, assert_trap, assert_exhaustion: plain and
//     metered give the same results (NaNs compared as NaNs) or the same
//     trap; tiny gives a result, a trap or out-of-fuel, never anything else.
//   - assert_invalid, assert_malformed: the pass refuses the module, or
//     wazero refuses what the pass made of it.
//   - assert_unlinkable, assert_uninstantiable: plain and metered agree.
//
// assert_malformed of the text format (.wat sources that are meant not to
// parse) has no binary to give the pass; those are counted apart.

const (
	tinyBudget = 40
	tinySlice  = 7
)

var errSpecOutOfFuel = errors.New("out of fuel")

// valueTypeV128 is wazero's v128, which its api does not name.
const valueTypeV128 api.ValueType = 0x7b

type specCommand struct {
	Type       string      `json:"type"`
	Line       int         `json:"line"`
	Name       string      `json:"name"`
	Filename   string      `json:"filename"`
	As         string      `json:"as"`
	Action     specAction  `json:"action"`
	Expected   []specValue `json:"expected"`
	ModuleType string      `json:"module_type"`
	Text       string      `json:"text"`
}

type specAction struct {
	Type   string      `json:"type"`
	Module string      `json:"module"`
	Field  string      `json:"field"`
	Args   []specValue `json:"args"`
}

type specValue struct {
	Type     string `json:"type"`
	LaneType string `json:"lane_type"`
	Value    any    `json:"value"`
}

// specTotals counts what the suite checked.
type specTotals struct {
	files, modules, validated, invalid, malformed, text, unlinkable, uninstantiable        atomic.Int64
	returns, traps, exhaustion, actions, gets, tinyCalls, tinyOutOfFuel, tinyDiverged, lax atomic.Int64
}

func TestSpecSuite(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/tetratelabs/wazero").Output()
	if err != nil {
		t.Fatalf("finding wazero's module (run go mod download): %v", err)
	}
	root := filepath.Join(strings.TrimSpace(string(out)), "internal", "integration_test", "spectest")
	spectestWasm, err := os.ReadFile(filepath.Join(root, "testdata", "spectest.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	validate, err := exec.LookPath("wasm-validate")
	if err != nil {
		t.Fatal("wasm-validate is not installed: scripts/deps installs it (Debian: apt-get install wabt)")
	}
	var totals specTotals
	for _, v := range []struct {
		dir      string
		features api.CoreFeatures
	}{{"v1", api.CoreFeaturesV1}, {"v2", api.CoreFeaturesV2}} {
		files, _ := filepath.Glob(filepath.Join(root, v.dir, "testdata", "*.json"))
		if len(files) == 0 {
			t.Fatalf("no spec tests in %s", filepath.Join(root, v.dir))
		}
		for _, f := range files {
			name := v.dir + "/" + strings.TrimSuffix(filepath.Base(f), ".json")
			t.Run(name, func(t *testing.T) {
				totals.files.Add(1)
				runSpecFile(t, f, v.features, spectestWasm, validate, &totals)
			})
		}
	}
	t.Logf("spec suite through the pass: %d files; %d modules (%d also by wasm-validate), %d invalid and %d malformed refused (%d of them by the pass where wazero accepts them), %d unlinkable and %d uninstantiable agreeing, %d text-format malformed (no binary); %d assert_return, %d assert_trap, %d assert_exhaustion, %d action and %d get the same instrumented; %d tiny-budget calls (%d out of fuel; %d not run where an earlier out-of-fuel left a module unlinkable)",
		totals.files.Load(), totals.modules.Load(), totals.validated.Load(), totals.invalid.Load(), totals.malformed.Load(), totals.lax.Load(),
		totals.unlinkable.Load(), totals.uninstantiable.Load(), totals.text.Load(),
		totals.returns.Load(), totals.traps.Load(), totals.exhaustion.Load(), totals.actions.Load(), totals.gets.Load(),
		totals.tinyCalls.Load(), totals.tinyOutOfFuel.Load(), totals.tinyDiverged.Load())
}

// specRuntime is one of the three runtimes a spec file runs in.
type specRuntime struct {
	rt       wazero.Runtime
	metered  bool
	budget   int64 // tiny: fuel left in this call; < 0: unlimited
	slice    int64
	modules  map[string]api.Module
	last     api.Module
	instance []api.Module
	// tiny only: calls that ran out of fuel, and the modules that did not
	// link after the state parted from the others ("" the last one)
	outOfFuel int
	diverged  map[string]bool
}

func newSpecRuntime(t *testing.T, ctx context.Context, features api.CoreFeatures, cache wazero.CompilationCache, metered bool, spectest []byte) *specRuntime {
	cfg := wazero.NewRuntimeConfigCompiler().WithCoreFeatures(features)
	if cache != nil {
		cfg = cfg.WithCompilationCache(cache)
	}
	r := &specRuntime{rt: wazero.NewRuntimeWithConfig(ctx, cfg), metered: metered, budget: -1, slice: 1_000_000, modules: map[string]api.Module{}, diverged: map[string]bool{}}
	t.Cleanup(func() { _ = r.rt.Close(ctx) })
	if _, err := r.rt.InstantiateWithConfig(ctx, spectest, wazero.NewModuleConfig().WithName("spectest")); err != nil {
		t.Fatal(err)
	}
	if metered {
		_, err := r.rt.NewHostModuleBuilder(ImportModule).NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(r.refill), nil, nil).Export(ImportRefill).Instantiate(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// refill hands out slices while the budget lasts (for ever when < 0).
func (r *specRuntime) refill(ctx context.Context, m api.Module, _ []uint64) {
	if ctx.Err() != nil {
		panic(ctx.Err())
	}
	g := m.ExportedGlobal(GlobalExport).(api.MutableGlobal)
	cur := int64(g.Get())
	for cur < 0 {
		if r.budget == 0 {
			panic(errSpecOutOfFuel)
		}
		n := r.slice
		if r.budget > 0 {
			n = min(n, r.budget)
			r.budget -= n
		}
		cur += n
	}
	g.Set(uint64(cur))
}

// instantiate runs a module command's binary (already through the pass
// for metered runtimes).
func (r *specRuntime) instantiate(ctx context.Context, bin []byte, name, as string) error {
	m, err := r.rt.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithName(as))
	if err != nil {
		return err
	}
	if name != "" {
		r.modules[name] = m
		delete(r.diverged, name)
	}
	delete(r.diverged, "")
	r.last = m
	r.instance = append(r.instance, m)
	return nil
}

func (r *specRuntime) module(name string) api.Module {
	if name != "" {
		return r.modules[name]
	}
	return r.last
}

// outcome of one invoke: results, or an error's first line.
type outcome struct {
	results []uint64
	err     error
}

func (o outcome) errLine() string {
	if o.err == nil {
		return ""
	}
	line, _, _ := strings.Cut(o.err.Error(), "\n")
	return line
}

func (r *specRuntime) invoke(ctx context.Context, a specAction) (outcome, api.FunctionDefinition) {
	m := r.module(a.Module)
	if m == nil {
		return outcome{err: fmt.Errorf("no module %q", a.Module)}, nil
	}
	fn := m.ExportedFunction(a.Field)
	if fn == nil {
		return outcome{err: fmt.Errorf("no export %q", a.Field)}, nil
	}
	var args []uint64
	for _, v := range a.Args {
		args = append(args, v.bits()...)
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// Every call starts with an empty stack, as a packd call does in its
	// fresh instance (the spec keeps using an instance after a trap, when
	// the pass's stack counter still counts the frames the trap left).
	if r.metered {
		for _, m := range r.instance {
			if g, ok := m.ExportedGlobal(StackExport).(api.MutableGlobal); ok {
				g.Set(0)
			}
		}
	}
	res, err := fn.Call(cctx, args...)
	if err != nil && r.metered {
		for _, m := range r.instance {
			if g := m.ExportedGlobal(StackExport); g != nil && uint32(g.Get()) > DefaultMaxStackBytes {
				err = errors.New("stack overflow") // what the sandbox reports for the pass's trap
			}
		}
	}
	return outcome{res, err}, fn.Definition()
}

// tinyInvoke runs an invoke with a tiny budget, every counter at zero.
func (r *specRuntime) tinyInvoke(ctx context.Context, a specAction) outcome {
	for _, m := range r.instance {
		if g, ok := m.ExportedGlobal(GlobalExport).(api.MutableGlobal); ok {
			g.Set(0)
		}
	}
	r.budget, r.slice = tinyBudget, tinySlice
	defer func() { r.budget, r.slice = -1, 1_000_000 }()
	o, _ := r.invoke(ctx, a)
	return o
}

func runSpecFile(t *testing.T, path string, features api.CoreFeatures, spectest []byte, validate string, totals *specTotals) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Commands []specCommand `json:"commands"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	ctx := context.Background()
	cache := wazero.NewCompilationCache()
	defer cache.Close(ctx)
	plain := newSpecRuntime(t, ctx, features, nil, false, spectest)
	metered := newSpecRuntime(t, ctx, features, cache, true, spectest)
	tiny := newSpecRuntime(t, ctx, features, cache, true, spectest)
	opt := Options{MaxTableElements: 1 << 20}

	for i := 0; i < len(file.Commands); i++ {
		c := file.Commands[i]
		where := fmt.Sprintf("line %d %s", c.Line, c.Type)
		read := func() []byte {
			b, err := os.ReadFile(filepath.Join(dir, c.Filename))
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			return b
		}
		switch c.Type {
		case "module":
			bin := read()
			as := ""
			if i+1 < len(file.Commands) && file.Commands[i+1].Type == "register" {
				as = file.Commands[i+1].As
				i++
			}
			if err := Prescan(bin); err != nil {
				t.Errorf("%s %s: the pre-scan refuses a valid module: %v", where, c.Filename, err)
			}
			out, err := Instrument(bin, opt)
			if err != nil {
				t.Fatalf("%s %s: the pass refuses a valid module: %v", where, c.Filename, err)
			}
			if validate != "" {
				if msg, ok := wasmValidate(t, validate, out); !ok {
					if _, origOK := wasmValidate(t, validate, bin); origOK {
						t.Errorf("%s %s: wasm-validate refuses the metered module: %s", where, c.Filename, msg)
					} else {
						t.Logf("%s %s: wasm-validate refuses it as written too: %s", where, c.Filename, strings.TrimSpace(msg))
					}
				} else {
					totals.validated.Add(1)
				}
			}
			errP := plain.instantiate(ctx, bin, c.Name, as)
			errM := metered.instantiate(ctx, out, c.Name, as)
			// The tiny runtime's state parts from the others once a call
			// runs out of fuel; a module that imports what it changed
			// may then fail to link there.
			if errT := tiny.instantiate(ctx, out, c.Name, as); errT != nil && errM == nil {
				if tiny.outOfFuel == 0 {
					t.Errorf("%s: tiny instantiation %v, metered %v", where, errT, errM)
				}
				tiny.diverged[c.Name] = true
			}
			if (errP == nil) != (errM == nil) {
				t.Errorf("%s %s: plain instantiation %v, metered %v", where, c.Filename, errP, errM)
			}
			totals.modules.Add(1)
		case "register":
			t.Errorf("%s: register of %q not right after its module", where, c.Name)
		case "assert_return", "action", "assert_trap", "assert_exhaustion":
			if c.Action.Type == "get" {
				gp, gm := plain.module(c.Action.Module).ExportedGlobal(c.Action.Field), metered.module(c.Action.Module).ExportedGlobal(c.Action.Field)
				if gp == nil || gm == nil || gp.Get() != gm.Get() {
					t.Errorf("%s: get %s: plain %v, metered %v", where, c.Action.Field, gp, gm)
				}
				totals.gets.Add(1)
				continue
			}
			p, def := plain.invoke(ctx, c.Action)
			m, _ := metered.invoke(ctx, c.Action)
			switch {
			case c.Type == "assert_return" && p.err != nil:
				t.Errorf("%s %s: wazero itself fails: %v", where, c.Action.Field, p.err)
			case (c.Type == "assert_trap" || c.Type == "assert_exhaustion") && p.err == nil:
				t.Errorf("%s %s: wazero itself does not trap", where, c.Action.Field)
			case p.errLine() != m.errLine():
				t.Errorf("%s %s: plain %q, metered %q", where, c.Action.Field, p.errLine(), m.errLine())
			case p.err == nil && !sameResults(p.results, m.results, def, c.Expected):
				t.Errorf("%s %s: plain %v, metered %v", where, c.Action.Field, p.results, m.results)
			}
			switch c.Type {
			case "assert_return":
				totals.returns.Add(1)
			case "action":
				totals.actions.Add(1)
			case "assert_trap":
				totals.traps.Add(1)
			case "assert_exhaustion":
				totals.exhaustion.Add(1)
			}
			if tiny.diverged[c.Action.Module] {
				totals.tinyDiverged.Add(1)
				continue
			}
			o := tiny.tinyInvoke(ctx, c.Action)
			totals.tinyCalls.Add(1)
			switch {
			case o.err == nil:
			case errors.Is(o.err, errSpecOutOfFuel):
				tiny.outOfFuel++
				totals.tinyOutOfFuel.Add(1)
			case strings.HasPrefix(o.err.Error(), "wasm error: "):
			default:
				t.Errorf("%s %s: with a tiny budget: %v", where, c.Action.Field, o.err)
			}
		case "assert_invalid", "assert_malformed":
			if c.ModuleType == "text" {
				totals.text.Add(1)
				continue
			}
			bin := read()
			if cm, err := plain.rt.CompileModule(ctx, bin); err == nil {
				_ = cm.Close(ctx)
				totals.lax.Add(1) // wazero accepts it: the pass must not
			}
			if out, err := Instrument(bin, opt); err == nil {
				if cm, err := metered.rt.CompileModule(ctx, out); err == nil {
					_ = cm.Close(ctx)
					t.Errorf("%s %s (%s): the pass made it valid", where, c.Filename, c.Text)
				}
			}
			if c.Type == "assert_invalid" {
				totals.invalid.Add(1)
			} else {
				totals.malformed.Add(1)
			}
		case "assert_unlinkable", "assert_uninstantiable":
			bin := read()
			errP := plain.instantiate(ctx, bin, "", "")
			var errM error
			out, err := Instrument(bin, opt)
			if err == nil {
				errM = metered.instantiate(ctx, out, "", "")
			}
			if err != nil || (errP == nil) != (errM == nil) {
				t.Errorf("%s %s: plain %v, metered %v (pass: %v)", where, c.Filename, errP, errM, err)
			}
			// A failed instantiation does not replace the last module.
			if c.Type == "assert_unlinkable" {
				totals.unlinkable.Add(1)
			} else {
				totals.uninstantiable.Add(1)
			}
		default:
			t.Errorf("%s: unknown command", where)
		}
	}
}

func wasmValidate(t *testing.T, validate string, bin []byte) (string, bool) {
	f := filepath.Join(t.TempDir(), "m.wasm")
	if err := os.WriteFile(f, bin, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(validate, f).CombinedOutput()
	return string(out), err == nil
}

// bits encodes an argument as wazero's stack values.
func (v specValue) bits() []uint64 {
	if v.Type == "v128" {
		lanes, _ := v.Value.([]any)
		width := map[string]int{"i8": 8, "i16": 16, "i32": 32, "i64": 64, "f32": 32, "f64": 64}[v.LaneType]
		var lo, hi uint64
		for i, l := range lanes {
			s, _ := l.(string)
			n := parseBits(s, width)
			if bit := i * width; bit < 64 {
				lo |= n << bit
			} else {
				hi |= n << (bit - 64)
			}
		}
		return []uint64{lo, hi}
	}
	s, _ := v.Value.(string)
	switch {
	case v.Value == nil || s == "null":
		return []uint64{0}
	case v.Type == "externref":
		n, _ := strconv.ParseUint(s, 10, 64)
		return []uint64{n + 1} // wazero's null externref is 0
	case strings.HasSuffix(v.Type, "32"):
		return []uint64{parseBits(s, 32)}
	}
	return []uint64{parseBits(s, 64)}
}

func parseBits(s string, width int) uint64 {
	var n uint64
	if strings.HasPrefix(s, "-") {
		i, _ := strconv.ParseInt(s, 10, 64)
		n = uint64(i)
	} else {
		n, _ = strconv.ParseUint(s, 10, 64)
	}
	if width < 64 {
		n &= 1<<width - 1
	}
	return n
}

// sameResults compares bit for bit, except that two NaNs are the same
// where a float (or a float lane) is expected.
func sameResults(a, b []uint64, def api.FunctionDefinition, expected []specValue) bool {
	if len(a) != len(b) {
		return false
	}
	if def == nil {
		return len(a) == 0
	}
	slot := 0
	for i, typ := range def.ResultTypes() {
		lane := ""
		if i < len(expected) {
			lane = expected[i].LaneType
		}
		switch typ {
		case valueTypeV128:
			if !sameV128(a[slot:slot+2], b[slot:slot+2], lane) {
				return false
			}
			slot += 2
			continue
		case api.ValueTypeF32:
			x, y := math.Float32frombits(uint32(a[slot])), math.Float32frombits(uint32(b[slot]))
			if a[slot] != b[slot] && !(x != x && y != y) {
				return false
			}
		case api.ValueTypeF64:
			x, y := math.Float64frombits(a[slot]), math.Float64frombits(b[slot])
			if a[slot] != b[slot] && !(x != x && y != y) {
				return false
			}
		default:
			if a[slot] != b[slot] {
				return false
			}
		}
		slot++
	}
	return true
}

func sameV128(a, b []uint64, lane string) bool {
	if a[0] == b[0] && a[1] == b[1] {
		return true
	}
	switch lane {
	case "f32":
		for _, w := range []int{0, 1} {
			for _, sh := range []uint{0, 32} {
				x, y := math.Float32frombits(uint32(a[w]>>sh)), math.Float32frombits(uint32(b[w]>>sh))
				if uint32(a[w]>>sh) != uint32(b[w]>>sh) && !(x != x && y != y) {
					return false
				}
			}
		}
		return true
	case "f64":
		for _, w := range []int{0, 1} {
			x, y := math.Float64frombits(a[w]), math.Float64frombits(b[w])
			if a[w] != b[w] && !(x != x && y != y) {
				return false
			}
		}
		return true
	}
	return false
}
