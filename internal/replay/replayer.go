package replay

// Replaying a record offline: the recorded module (or another, to see
// where it departs), its snapshot rebuilt from the tape of its
// initialisation, the call served the recorded host answers in order,
// never the network; then the output, the error and the fuel compared.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/redact"
	"github.com/kindgi/packd/internal/sandbox"
)

// Config configures a Replayer.
type Config struct {
	// Sandbox is the base of the sandboxes replays run in (its cache,
	// output); each record's guest limits are applied over it.
	Sandbox sandbox.Config
	// Secret gives a secret's value by its record name ("env.NAME",
	// "ctx.secrets.NAME"); one whose hash differs from the recorded one,
	// or that it lacks, is replaced by a placeholder of its length.
	Secret func(name string) (string, bool)
}

// Replayer replays records, one at a time. The records of
// one snapshot (of one module, environment and initialisation tape) share
// the module it rebuilt, as a service's calls share theirs.
type Replayer struct {
	cfg  Config
	mu   sync.Mutex
	sbs  map[sandbox.GuestLimits]*sandbox.Sandbox
	mods map[replayKey]*replayModule
}

// replayKey is what makes a replay's module and snapshot: the module's
// hash, the limits, and the environment (joined by NULs) and id of the
// snapshot ("" for a fresh call's module).
type replayKey struct {
	module   string
	limits   sandbox.GuestLimits
	env      string
	snapshot string
}

// replayModule is a compiled module and what rebuilding its snapshot gave.
type replayModule struct {
	once       sync.Once
	m          *sandbox.Module
	err        error
	divergence *sandbox.DivergenceError
	snapshotID string
	built      time.Time
}

// replayModuleAge is how long a Replayer uses a module it built.
const replayModuleAge = time.Minute

// maxReplayModules bounds the modules a Replayer keeps.
const maxReplayModules = 16

// NewReplayer makes a Replayer; Close it.
func NewReplayer(cfg Config) *Replayer {
	return &Replayer{cfg: cfg, sbs: map[sandbox.GuestLimits]*sandbox.Sandbox{}, mods: map[replayKey]*replayModule{}}
}

// Close closes its modules and sandboxes. Safe twice.
func (r *Replayer) Close(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, rm := range r.mods {
		if rm.m != nil {
			errs = append(errs, rm.m.Close(ctx))
		}
	}
	r.mods = nil
	for _, sb := range r.sbs {
		errs = append(errs, sb.Close(ctx))
	}
	r.sbs = nil
	return errors.Join(errs...)
}

// Replay is what replaying a record found.
type Replay struct {
	// ModuleSHA256 is the replayed module's hash; ModuleChanged says it is
	// not the recorded one.
	ModuleSHA256  string
	ModuleChanged bool
	// SnapshotID is the rebuilt snapshot's ("" for a fresh call);
	// SnapshotChanged says it differs from the recorded one.
	SnapshotID      string
	SnapshotChanged bool
	// Placeholders names the secrets not supplied (or supplied with
	// another value): the guest saw a placeholder of their length. A bound
	// credential is never among them: the guest never saw it.
	Placeholders []string
	// Divergence is the first host call that differs from the recording,
	// in the initialisation (InInit) or the call.
	Divergence *sandbox.DivergenceError
	InInit     bool
	// Result is what the replayed guest answered.
	Result Result
	// Differences say in words what differs from the recorded result, the
	// first difference first; none: identical.
	Differences []string
}

// Identical reports whether the replay gave the recorded output, error
// and fuel, asking the host for exactly what the recording holds.
func (r *Replay) Identical() bool { return r.Divergence == nil && len(r.Differences) == 0 }

// Replay replays rec on the module wasm, within ctx.
func (r *Replayer) Replay(ctx context.Context, rec *Record, wasm []byte) (*Replay, error) {
	out := &Replay{ModuleSHA256: ContentHash(wasm)}
	out.ModuleChanged = out.ModuleSHA256 != rec.Module.SHA256
	pooled := rec.Instance != sandbox.InstanceFresh
	supplied := r.secrets(rec, out)
	env := make([]string, len(rec.Env))
	for i, name := range rec.Env {
		env[i] = name + "=" + supplied["env."+name]
	}
	rm, err := r.module(ctx, rec, out.ModuleSHA256, wasm, env)
	if err != nil {
		return nil, err
	}
	if rm.divergence != nil {
		d := *rm.divergence
		out.InInit, out.Divergence = true, &d
		out.scrub(supplied)
		return out, nil
	}
	m := rm.m
	if pooled {
		out.SnapshotID = rm.snapshotID
		out.SnapshotChanged = out.SnapshotID != rec.Snapshot.ID
	}
	rs := newRestorer(rec, supplied)
	tape := &sandbox.Tape{Answers: rs.tape(rec)}
	rep, err := m.Call(ctx, sandbox.Request{Body: rs.restore("guestRequest", rec.GuestRequest), Env: env,
		CallLimits: rec.CallLimits, Fresh: !pooled, Replay: tape})
	if errors.As(err, &out.Divergence) {
		out.scrub(supplied)
		return out, nil
	}
	// A call its deadline stopped is never recorded: a deadline here is
	// the replay's own (the sandbox may see it before ctx says so).
	if errors.Is(err, sandbox.ErrDeadline) {
		return nil, context.DeadlineExceeded
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	out.Result = Result{Status: int(rep.Status), Output: rep.Body, Fuel: rep.FuelUsed}
	if err != nil {
		out.Result.Error = err.Error()
	}
	if tape.Unserved() > 0 {
		out.Divergence = unserved(tape)
	}
	out.compare(rec, rs)
	out.scrub(supplied)
	return out, nil
}

// scrub keeps the secrets a replay was given out of what it says in
// words (a difference quoting the output, a divergence naming a request):
// a replay's report is read where a record is, and holds no more.
func (out *Replay) scrub(supplied map[string]string) {
	var set redact.Set
	for name, v := range supplied {
		set.Add(name, v, minRedacted)
	}
	for i, d := range out.Differences {
		out.Differences[i] = set.String(d, "***")
	}
	if d := out.Divergence; d != nil {
		d.Want, d.Got = set.String(d.Want, "***"), set.String(d.Got, "***")
	}
}

// unserved is the divergence of a replay that asked the host for less
// than the recording holds.
func unserved(t *sandbox.Tape) *sandbox.DivergenceError {
	a := t.Answers[len(t.Answers)-t.Unserved()]
	return &sandbox.DivergenceError{At: len(t.Answers) - t.Unserved(), Want: a.Import, Got: "nothing more (it ended)", RecordFuel: a.Fuel}
}

// compare notes how the replayed result differs from the recorded one.
func (out *Replay) compare(rec *Record, rs *restorer) {
	want := rec.Result
	wantOut := rs.restore("output", want.Output)
	wantErr := string(rs.restore("error", []byte(want.Error)))
	if out.Result.Status != want.Status {
		out.Differences = append(out.Differences, fmt.Sprintf("status %s, recorded %s", statusName(out.Result.Status), statusName(want.Status)))
	}
	if !bytes.Equal(out.Result.Output, wantOut) {
		out.Differences = append(out.Differences, "output "+firstDifference(out.Result.Output, wantOut))
	}
	if out.Result.Error != wantErr {
		out.Differences = append(out.Differences, fmt.Sprintf("error %q, recorded %q", out.Result.Error, wantErr))
	}
	if out.Result.Fuel != want.Fuel {
		out.Differences = append(out.Differences, fmt.Sprintf("fuel %d, recorded %d", out.Result.Fuel, want.Fuel))
	}
}

func statusName(s int) string {
	switch abi.Status(s) {
	case abi.StatusOK:
		return "ok"
	case abi.StatusThrown:
		return "thrown"
	case abi.StatusNoHandler:
		return "no-handler"
	}
	return fmt.Sprint(s)
}

// firstDifference says where two outputs first differ.
func firstDifference(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	return fmt.Sprintf("differs at byte %d of %d (recorded %d): %q, recorded %q", i, len(got), len(want), around(got, i), around(want, i))
}

func around(b []byte, i int) string {
	from, to := max(i-16, 0), min(i+32, len(b))
	return string(b[from:to])
}

// module is the compiled module a record replays on, its snapshot
// rebuilt from the record's when the call was pooled.
func (r *Replayer) module(ctx context.Context, rec *Record, sum string, wasm []byte, env []string) (*replayModule, error) {
	key := replayKey{module: sum, limits: rec.Limits}
	if rec.Instance != sandbox.InstanceFresh {
		key.env, key.snapshot = strings.Join(env, "\x00"), rec.Snapshot.ID
	}
	r.mu.Lock()
	if r.mods == nil {
		r.mu.Unlock()
		return nil, errors.New("the replayer is closed")
	}
	rm := r.mods[key]
	if rm != nil && time.Since(rm.built) > replayModuleAge {
		// A pool drops its snapshot at an age (and would take a live one):
		// long before that, the module is built anew.
		if rm.m != nil {
			_ = rm.m.Close(context.Background())
		}
		delete(r.mods, key)
		rm = nil
	}
	if rm == nil {
		if len(r.mods) >= maxReplayModules {
			for k, old := range r.mods { // any one: records come grouped
				if old.m != nil {
					_ = old.m.Close(context.Background())
				}
				delete(r.mods, k)
				break
			}
		}
		rm = &replayModule{built: time.Now()}
		r.mods[key] = rm
	}
	r.mu.Unlock()
	rm.once.Do(func() { rm.build(ctx, r, rec, wasm, env) })
	if rm.err != nil {
		// An error (the replay's deadline, say) is this replay's, not the
		// module's: the next record builds it anew.
		r.mu.Lock()
		if r.mods[key] == rm {
			delete(r.mods, key)
			if rm.m != nil {
				_ = rm.m.Close(context.Background())
			}
		}
		r.mu.Unlock()
	}
	return rm, rm.err
}

// build compiles the module and, for a pooled call, rebuilds its snapshot
// from the recorded initialisation.
func (rm *replayModule) build(ctx context.Context, r *Replayer, rec *Record, wasm []byte, env []string) {
	sb, err := r.sandbox(ctx, rec.Limits)
	if err == nil {
		rm.m, err = sb.Compile(ctx, wasm)
	}
	if err != nil || rec.Instance == sandbox.InstanceFresh {
		rm.err = err
		return
	}
	init := &sandbox.Tape{Answers: rec.Snapshot.Tape}
	err = rm.m.WarmReplay(ctx, env, init)
	switch {
	case errors.As(err, &rm.divergence):
	case err != nil:
		rm.err = fmt.Errorf("rebuilding the snapshot: %w", err)
	case init.Unserved() > 0:
		rm.divergence = unserved(init)
	default:
		rm.snapshotID, _, _ = rm.m.Snapshot()
	}
}

// sandbox is the replayer's sandbox for a record's guest limits.
func (r *Replayer) sandbox(ctx context.Context, lim sandbox.GuestLimits) (*sandbox.Sandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sbs == nil {
		return nil, errors.New("the replayer is closed")
	}
	if sb := r.sbs[lim]; sb != nil {
		return sb, nil
	}
	cfg := r.cfg.Sandbox
	lim.Apply(&cfg)
	cfg.PoolSize = 1
	sb, err := sandbox.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r.sbs[lim] = sb
	return sb, nil
}

// secrets are the values of the record's secrets the replay has (by
// name), each checked against its hash; the others are placeholders of
// their length, named in out.Placeholders.
func (r *Replayer) secrets(rec *Record, out *Replay) map[string]string {
	vals := map[string]string{}
	for _, s := range rec.Secrets {
		if _, done := vals[s.Name]; done {
			continue
		}
		var v string
		ok := false
		if r.cfg.Secret != nil {
			v, ok = r.cfg.Secret(s.Name)
		}
		if !ok || ContentHash([]byte(v)) != s.SHA256 {
			v = strings.Repeat("*", s.Length)
			if !s.Bound {
				out.Placeholders = append(out.Placeholders, s.Name)
			}
		}
		vals[s.Name] = v
	}
	return vals
}

// restorer writes back the secrets a replay has where a record redacted
// them: the record's redactions by where they are, and each secret's
// texts (its value, and as it is written inside a JSON string), worked out
// once.
type restorer struct {
	at    map[string][]Redaction
	texts map[string]map[string][]byte // by secret, by form
}

func newRestorer(rec *Record, supplied map[string]string) *restorer {
	rs := &restorer{at: map[string][]Redaction{}, texts: map[string]map[string][]byte{}}
	for _, red := range rec.Redactions {
		rs.at[red.In] = append(rs.at[red.In], red)
	}
	for name, v := range supplied {
		forms := map[string][]byte{"raw": []byte(v), "json": []byte(v)}
		for _, f := range redact.Forms(v) {
			forms[f.Kind] = f.Text
		}
		rs.texts[name] = forms
	}
	return rs
}

// restore is b, a copy, with the secrets redacted in it (in) written back
// where the replay has their values.
func (rs *restorer) restore(in string, b []byte) []byte {
	b = bytes.Clone(b)
	for _, red := range rs.at[in] {
		v := rs.texts[red.Secret][red.Form]
		if len(v) == red.Length && red.Offset >= 0 && red.Offset+red.Length <= len(b) {
			copy(b[red.Offset:], v)
		}
	}
	return b
}

// tape is the record's tape with its secrets written back.
func (rs *restorer) tape(rec *Record) []sandbox.TapeAnswer {
	tape := make([]sandbox.TapeAnswer, len(rec.Tape))
	for i, a := range rec.Tape {
		a.Value = rs.restore(fmt.Sprintf("tape/%d", i), a.Value)
		if a.Detail != "" {
			a.Detail = string(rs.restore(fmt.Sprintf("tape/%d/detail", i), []byte(a.Detail)))
		}
		tape[i] = a
	}
	return tape
}
