package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/ojson"
	"github.com/kindgi/packd/internal/replay"
	"github.com/kindgi/packd/internal/service"
)

// fuelBasis says what a call's fuel was measured on.
func fuelBasis(pool int) string {
	if pool == 0 {
		return "a fresh instance: its _initialize is charged to the call, as under serve --pool-size 0"
	}
	return "from the snapshot, as a pooled serve call"
}

func invokeCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("packd invoke", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		lf                                 loadFlags
		rf                                 recordFlags
		toolID, toolVersion, input, ctxArg string
		checkID, config, trace             string
		timeoutMs                          int64
		recordFailed                       bool
	)
	lf.register(fs, os.Getenv)
	rf.register(fs, os.Getenv, false)
	fs.StringVar(&toolID, "tool", "", "the tool id to invoke")
	fs.StringVar(&toolVersion, "version", "", "the tool version to ask for (default: none named)")
	fs.StringVar(&input, "input", "{}", "the tool input: JSON, @file or @- for stdin")
	fs.StringVar(&ctxArg, "ctx", `{"tenantId":"cli","runId":"cli"}`, "the callContext: JSON or @file")
	fs.StringVar(&checkID, "check", "", "the check id to invoke (instead of --tool)")
	fs.StringVar(&config, "config", "{}", "the check config: JSON or @file")
	fs.StringVar(&trace, "trace", "{}", "the run trace the check evaluates: JSON or @file")
	fs.Int64Var(&timeoutMs, "timeout-ms", host.DefaultTimeout.Milliseconds(), "the call's deadline in milliseconds")
	fs.BoolVar(&recordFailed, "record-failed", false, "with --record: record the call even when it fails (by default only a call that answers a result is recorded: a record is a test's baseline)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	usageErr := func(err error) int {
		fmt.Fprintln(stderr, "packd invoke:", err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		return usageErr(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if (toolID == "") == (checkID == "") {
		return usageErr(errors.New("name exactly one of --tool and --check"))
	}
	if timeoutMs <= 0 {
		return usageErr(errors.New("--timeout-ms must be positive"))
	}
	if p := rf.check(); len(p) > 0 {
		return usageErr(errors.New(strings.Join(p, "; ")))
	}
	var msg *ojson.Object
	if toolID != "" {
		in, err := jsonArg("input", input, stdin)
		if err != nil {
			return usageErr(err)
		}
		callCtx, err := jsonArg("ctx", ctxArg, stdin)
		if err != nil {
			return usageErr(err)
		}
		tool := &ojson.Object{Keys: []string{"id"}, Vals: []any{toolID}}
		if toolVersion != "" {
			tool.Set("version", toolVersion)
		}
		msg = &ojson.Object{Keys: []string{"v", "kind", "tool", "input", "ctx"},
			Vals: []any{float64(abi.ProtocolVersion), abi.KindInvoke, tool, in, callCtx}}
	} else {
		cfg, err := jsonArg("config", config, stdin)
		if err != nil {
			return usageErr(err)
		}
		tr, err := jsonArg("trace", trace, stdin)
		if err != nil {
			return usageErr(err)
		}
		msg = &ojson.Object{Keys: []string{"v", "kind", "check", "config", "trace"},
			Vals: []any{float64(abi.ProtocolVersion), abi.KindCheckInvoke,
				&ojson.Object{Keys: []string{"id"}, Vals: []any{checkID}}, cfg, tr}}
	}
	// Guest lines reach stderr from the sandbox's queue, on a goroutine of
	// their own: every write to stderr takes the same lock.
	stderr = &syncWriter{w: stderr}
	// The call runs on an instance reset to the module's snapshot, as a
	// pooled serve call does: its fuel, outcome and record are the ones
	// serve would have (a fresh instance would charge its _initialize to
	// the call: 57.6 M fuel for a Go echo against 0.12 M).
	lf.poolAuto = 1
	hc, err := lf.config(stderr)
	if err != nil {
		return usageErr(err)
	}
	if lf.cacheWarning != "" {
		fmt.Fprintln(stderr, "packd invoke: warning:", lf.cacheWarning)
	}
	hc.Record = rf.config()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	pack, err := host.Load(ctx, hc)
	var le *host.LoadError
	if errors.As(err, &le) {
		for _, p := range le.Problems {
			fmt.Fprintln(stderr, "packd invoke: warning:", p)
		}
		if le.ModuleRoot != "" {
			fmt.Fprintf(stderr, "packd invoke: warning: module paths resolve in %s (the index's directory unless --module-root says otherwise)\n", le.ModuleRoot)
		}
	} else if err != nil {
		fmt.Fprintln(stderr, "packd invoke:", err)
		return exitError
	}
	if pack == nil {
		return exitError
	}
	defer pack.Close(context.Background())

	// The call goes through the service, as every face's does: one call,
	// so no tenant's share to keep; its event and record are kept here.
	var event service.Event
	kept := &keptRecord{}
	sc := service.Config{Pack: pack, TenantShareOff: true,
		Hooks: []service.Hook{service.HookFunc(func(e service.Event) { event = e })}}
	if hc.Record != nil {
		sc.Records = kept
	}
	svc, err := service.New(sc)
	if err != nil {
		fmt.Fprintln(stderr, "packd invoke:", err)
		return exitError
	}
	body := ojson.Encode(msg)
	a := svc.Call(ctx, service.Request{Body: func() ([]byte, *service.Refusal) { return body, nil },
		Timeout: time.Duration(timeoutMs) * time.Millisecond, Face: cliFace{}})
	a.Done()
	_ = svc.Close(context.Background())
	_ = pack.Close(context.Background()) // writes out the guest's last lines first
	fmt.Fprintf(stderr, "packd invoke: fuel used: %d (%s)\n", event.Fuel, fuelBasis(hc.Sandbox.PoolSize))
	switch {
	case hc.Record == nil:
	case event.Outcome != "ok" && !recordFailed:
		// A record replays as "identical" whatever the call answered: one
		// of a failing call would make its failure a test's baseline.
		fmt.Fprintf(stderr, "packd invoke: the call failed (%s): not recorded (--record-failed records it anyway)\n", event.Outcome)
	default:
		if code := writeRecord(rf.dir, kept, stderr); code != exitOK {
			return code
		}
	}
	if r := a.Refusal; r != nil {
		why := r.Message
		if why == "" {
			why = r.Code
		}
		fmt.Fprintln(stderr, "packd invoke: refused:", why)
		return exitError
	}
	fmt.Fprintf(stdout, "%s\n", a.Response)
	if event.Outcome != "ok" {
		if near := nearestID(pack.Index(), event.Outcome, toolID+checkID); near != "" {
			fmt.Fprintf(stderr, "packd invoke: did you mean %s?\n", near)
		}
		return exitError
	}
	return exitOK
}

// nearestID is the pack's tool or check id nearest to one a call named
// that the pack lacks (outcome tool-not-in-pack or check-not-in-pack), or "".
func nearestID(idx host.Index, outcome, id string) string {
	var ids []string
	switch outcome {
	case "tool-not-in-pack":
		for _, t := range idx.Tools {
			ids = append(ids, t.ID)
		}
	case "check-not-in-pack":
		for _, g := range idx.Guardrails {
			ids = append(ids, g.InvokeID())
		}
	}
	best, bestD := "", max(3, len(id)/4)+1
	for _, c := range ids {
		if d := editDistance(id, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// cliFace is packd invoke as a face: its exit status, 0 for an answer.
type cliFace struct{}

func (cliFace) Name() string { return "cli" }

func (cliFace) Status(code string) int {
	if code == "" {
		return exitOK
	}
	return exitError
}

// keptRecord is the record of the one call packd invoke makes.
type keptRecord struct {
	rec     *replay.Record
	skipped string
}

func (k *keptRecord) Keep(rec *replay.Record, skipped, artifactVersion string) {
	if rec != nil {
		rec.ArtifactVersion = artifactVersion
	}
	k.rec, k.skipped = rec, skipped
}

// writeRecord writes the record of an invoked call into dir, and says
// where, or why there is none.
func writeRecord(dir string, kept *keptRecord, stderr io.Writer) int {
	if kept.rec == nil {
		why := kept.skipped
		if why == "" {
			why = "no pack code ran"
		}
		fmt.Fprintln(stderr, "packd invoke: the call is not recorded:", why)
		return exitOK
	}
	path, err := replay.WriteFile(dir, kept.rec)
	if err != nil {
		fmt.Fprintln(stderr, "packd invoke:", err)
		return exitError
	}
	fmt.Fprintln(stderr, "packd invoke: recorded:", path)
	return exitOK
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
