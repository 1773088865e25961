// Package guest is the Go SDK for writing a packd pack: register tool handlers
// and guardrail checks by id in init functions, then build the package main
// with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o pack.wasm .
//
// The module then implements guest ABI v1 (see ../GUEST-ABI.md): packd hands a
// handler the call's input and callContext, and nothing else; what the handler
// returns is encoded as JSON and becomes the tool's output. A returned error or
// a panic becomes a `handler-throw` with the error's name and message.
//
// Outside wasip1 the package still compiles, so handlers can be unit-tested
// with plain `go test` through Dispatch.
package guest

import (
	"encoding/json"
	"errors"
	"fmt"
	stdmaps "maps"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/kindgi/packd/abi/guest/wire"
)

// Context is the call's callContext, as the caller sent it (the Pack
// protocol's ctx). Raw is the whole ctx, for fields this struct does not
// name.
//
// Env is the call's own ctx.env: values the calling runtime passes with
// this one call (protocol 2.5.0). It is not the process environment: what
// os.Getenv sees is the pack service's environment, filtered to the names
// the index declares (RequireEnv, OptionalEnv), and the same for every
// call. Secrets are the call's secrets by name; Settings the settings
// blocks the calling agent version pins, each block's values by block id
// (protocol 2.4.0); IdempotencyKey the caller's key for this call, the
// same on a retry (protocol 2.6.0). Each is empty when the caller sent
// none.
type Context struct {
	TenantID       string                     `json:"tenantId"`
	RunID          string                     `json:"runId"`
	ProjectID      string                     `json:"projectId,omitempty"`
	OrgID          string                     `json:"orgId,omitempty"`
	RequestID      string                     `json:"requestId,omitempty"`
	IdempotencyKey string                     `json:"idempotencyKey,omitempty"`
	Env            map[string]string          `json:"env,omitempty"`
	Secrets        map[string]json.RawMessage `json:"secrets,omitempty"`
	Settings       map[string]json.RawMessage `json:"settings,omitempty"`
	Raw            json.RawMessage            `json:"-"`
}

// ToolFunc handles one tool call. input is the validated input with schema
// defaults filled in, as JSON with its key order kept.
type ToolFunc func(input json.RawMessage, ctx *Context) (any, error)

// AnyToolFunc handles calls to any tool id that has no handler of its own.
type AnyToolFunc func(id string, input json.RawMessage, ctx *Context) (any, error)

// RawToolFunc is a ToolFunc that answers JSON it has written itself (or
// its input, as an echo does): the output goes out as it is when it is
// compact JSON that json.Marshal would leave unchanged, and is otherwise
// encoded as a json.RawMessage would be (invalid JSON throws a TypeError).
// A ToolFunc that returns a json.RawMessage does the same, but the any it
// returns holds a copy of the slice on the heap: in a pooled instance
// that one allocation is about 2,700 units of fuel and five pages that
// packd's reset copies back after every call.
type RawToolFunc func(input json.RawMessage, ctx *Context) (json.RawMessage, error)

// AnyRawToolFunc is an AnyToolFunc that answers JSON (see RawToolFunc).
type AnyRawToolFunc func(id string, input json.RawMessage, ctx *Context) (json.RawMessage, error)

// CheckFunc evaluates a guardrail check: config as sent, trace the run trace.
// It returns a result object with at least a boolean `passed` (anything
// else is a check-shape-invalid); CheckResult is one.
type CheckFunc func(config, trace json.RawMessage) (any, error)

// CheckResult is a check's result: whether the trace passed, and, when it
// did not, why, for people.
type CheckResult struct {
	Passed bool   `json:"passed"`
	Reason string `json:"reason,omitempty"`
}

// mu guards registration: the handlers, the specs and the env.
var (
	mu         sync.Mutex
	toolSpecs  = map[string]wire.ToolSpec{}  // what the options say, for packd index
	checkSpecs = map[string]wire.CheckSpec{} // of each registered id
	envSpec    wire.EnvSpec                  // RequireEnv, OptionalEnv
)

// registered is the handlers, read by each call without a lock: a
// registration (under mu) stores a changed copy. Each call taking mu
// wrote the mutex's page, one more page a pooled instance's reset copies
// back after every call.
var registered atomic.Pointer[handlers]

// (Stored before any init function runs, the SDK's own included.)
var _ = func() bool { registered.Store(noHandlers()); return true }()

func noHandlers() *handlers {
	return &handlers{tools: map[string]toolHandler{}, checks: map[string]CheckFunc{}}
}

// handlers is what the pack registered; a copy is changed, never the
// one registered holds.
type handlers struct {
	tools   map[string]toolHandler
	checks  map[string]CheckFunc
	anyTool toolHandler // for ids without a handler of their own
}

// toolHandler is a tool's handler: one of value (Tool, AnyTool) and raw
// (RawTool, AnyRawTool), or neither when there is none.
type toolHandler struct {
	value AnyToolFunc
	raw   AnyRawToolFunc
}

func (h toolHandler) none() bool { return h.value == nil && h.raw == nil }

// register changes a copy of the handlers under mu (its caller holds it)
// and stores it.
func register(change func(h *handlers)) {
	old := registered.Load()
	h := &handlers{tools: stdmaps.Clone(old.tools), checks: stdmaps.Clone(old.checks), anyTool: old.anyTool}
	change(h)
	registered.Store(h)
}

// Tool registers the handler for a tool id, with what the options say of
// it for `packd index` (its version, description, schemas). Registering
// an id twice panics.
func Tool(id string, fn ToolFunc, opts ...Option) {
	if fn == nil {
		panic(fmt.Sprintf("guest: bad or duplicate tool %q", id))
	}
	addTool(id, toolHandler{value: func(_ string, input json.RawMessage, ctx *Context) (any, error) { return fn(input, ctx) }}, opts)
}

// RawTool is Tool for a handler that answers JSON (see RawToolFunc).
func RawTool(id string, fn RawToolFunc, opts ...Option) {
	if fn == nil {
		panic(fmt.Sprintf("guest: bad or duplicate tool %q", id))
	}
	addTool(id, toolHandler{raw: func(_ string, input json.RawMessage, ctx *Context) (json.RawMessage, error) { return fn(input, ctx) }}, opts)
}

func addTool(id string, h toolHandler, opts []Option) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registered.Load().tools[id]; dup || id == "" {
		panic(fmt.Sprintf("guest: bad or duplicate tool %q", id))
	}
	register(func(hs *handlers) { hs.tools[id] = h })
	toolSpecs[id] = options(opts).toolSpec(id)
}

// TypedTool registers a tool whose input decodes into In and whose output
// is an Out. Its input and output schemas, for `packd index`, are derived
// from In and Out (SchemaOf) unless InputSchema or OutputSchema say
// otherwise. Input that does not decode into In throws a TypeError (packd
// has already validated it against the tool's input schema).
func TypedTool[In, Out any](id string, fn func(in In, ctx *Context) (Out, error), opts ...Option) {
	e := options(opts)
	if e.input == nil {
		e.input = SchemaOf(reflect.TypeFor[In]())
	}
	if e.output == nil {
		e.output = SchemaOf(reflect.TypeFor[Out]())
	}
	Tool(id, func(raw json.RawMessage, ctx *Context) (any, error) {
		var in In
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, &Error{Name: "TypeError", Message: "input does not decode: " + err.Error()}
		}
		return fn(in, ctx)
	}, func(x *entry) { *x = *e })
}

// AnyTool registers a handler for every tool id without its own handler.
func AnyTool(fn AnyToolFunc) { setAnyTool(toolHandler{value: fn}) }

// AnyRawTool is AnyTool for a handler that answers JSON (see
// RawToolFunc). An echo is one:
//
//	guest.AnyRawTool(func(_ string, input json.RawMessage, _ *guest.Context) (json.RawMessage, error) {
//		return input, nil
//	})
func AnyRawTool(fn AnyRawToolFunc) { setAnyTool(toolHandler{raw: fn}) }

func setAnyTool(h toolHandler) {
	mu.Lock()
	defer mu.Unlock()
	register(func(hs *handlers) { hs.anyTool = h })
}

// Check registers a guardrail check by its check id, with what the
// options say of it (Kind, Action, Severity, Guardrail, ConfigSchema,
// Description, Limits, Network).
func Check(id string, fn CheckFunc, opts ...Option) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registered.Load().checks[id]; dup || id == "" || fn == nil {
		panic(fmt.Sprintf("guest: bad or duplicate check %q", id))
	}
	register(func(hs *handlers) { hs.checks[id] = fn })
	checkSpecs[id] = options(opts).checkSpec(id)
}

// TypedCheck registers a check whose config decodes into Config. Its
// config schema, for `packd index`, is derived from Config (SchemaOf)
// unless ConfigSchema says otherwise. packd validates config as the caller
// sent it, with no defaults filled in, so a field the caller may leave out
// is `omitempty` and reaches fn as its zero value. A config that does not
// decode into Config throws a TypeError.
func TypedCheck[Config any](id string, fn func(config Config, trace json.RawMessage) (CheckResult, error), opts ...Option) {
	e := options(opts)
	if e.config == nil {
		e.config = SchemaOf(reflect.TypeFor[Config]())
	}
	Check(id, func(raw, trace json.RawMessage) (any, error) {
		var c Config
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &c); err != nil {
				return nil, &Error{Name: "TypeError", Message: "config does not decode: " + err.Error()}
			}
		}
		return fn(c, trace)
	}, func(x *entry) { *x = *e })
}

// RequireEnv names process environment variables the pack reads with
// os.Getenv and cannot work without; OptionalEnv those it reads when they
// are set. packd index writes them into the index's env, and packd passes
// a module only the names the index declares (a strict service is not
// ready while a required one is unset). Call them in init.
func RequireEnv(names ...string) { addEnv(&envSpec.Required, names) }

// OptionalEnv: see RequireEnv.
func OptionalEnv(names ...string) { addEnv(&envSpec.Optional, names) }

func addEnv(list *[]string, names []string) {
	mu.Lock()
	defer mu.Unlock()
	for _, n := range names {
		if !slices.Contains(*list, n) {
			*list = append(*list, n)
		}
	}
	slices.Sort(*list)
}

// Error is a thrown error with a name, as JavaScript errors have. Return one
// from a handler to choose the name packd reports; any other error is
// reported with the name "Error".
type Error struct {
	Name    string
	Message string
}

func (e *Error) Error() string { return e.Name + ": " + e.Message }

// Describe returns the description kindgi_describe writes.
func Describe() []byte {
	mu.Lock()
	defer mu.Unlock()
	h := registered.Load()
	d := wire.Description{Tools: []string{}, Checks: []string{}}
	for id := range h.tools {
		d.Tools = append(d.Tools, id)
		d.ToolSpecs = append(d.ToolSpecs, toolSpecs[id])
	}
	if !h.anyTool.none() {
		d.Tools = append(d.Tools, wire.Wildcard)
	}
	for id := range h.checks {
		d.Checks = append(d.Checks, id)
		d.CheckSpecs = append(d.CheckSpecs, checkSpecs[id])
	}
	sort.Strings(d.Tools)
	sort.Strings(d.Checks)
	sort.Slice(d.ToolSpecs, func(i, j int) bool { return d.ToolSpecs[i].ID < d.ToolSpecs[j].ID })
	sort.Slice(d.CheckSpecs, func(i, j int) bool { return d.CheckSpecs[i].ID < d.CheckSpecs[j].ID })
	if len(envSpec.Required)+len(envSpec.Optional) > 0 {
		env := wire.EnvSpec{Required: slices.Clone(envSpec.Required), Optional: slices.Clone(envSpec.Optional)}
		d.Env = &env
	}
	b, _ := json.Marshal(d)
	return b
}

// request is the request message as abi defines it.
type request = wire.Request

// prewarm collects the runtime's start-up garbage, leaving heap free for
// calls, then runs the SDK's encoding/json paths once (decoding a request
// and its ctx when the fast decoders leave them to it, encoding an output
// and a thrown error), so that encoding/json's caches are in the snapshot.
func prewarm() {
	reserveHeap()
	var r request
	_ = json.Unmarshal([]byte(`{"kind":"invoke","tool":{"id":"x"},"check":{"id":"x"},"input":{"a":[1,"b",true,null,{}]},"ctx":{},"config":{},"trace":{}}`), &r)
	var c Context
	_ = json.Unmarshal([]byte(`{"tenantId":"t","runId":"r","projectId":"p","orgId":"o","requestId":"q","idempotencyKey":"k","env":{"A":"b"},"secrets":{"s":"v"}}`), &c)
	_, _ = json.Marshal(r.Input)
	_, _ = json.Marshal(map[string]any{"s": "x", "n": 1.5, "b": true, "a": []any{nil}, "o": map[string]string{"k": "v"}})
	thrownStack("Error", "m", "s")
}

// heapHeadroom is free heap the SDK leaves for calls. A wasm memory never
// shrinks, and a pooled instance whose call grew it is closed rather than
// reset (packd GUEST-ABI.md, "Pooled instances"); a call that allocates
// less than this, beyond its garbage, does not grow it. Measured with the
// echo pack: collecting at the start of init costs calls nothing, where
// collecting at its end made every call refill the allocator's caches
// (10% more fuel with 2 MiB, 55% with 4 MiB or more).
const heapHeadroom = 2 << 20

var sink []byte

// reserveHeap has the Go runtime take heapHeadroom of memory from the host
// and then free it: the heap keeps it for later allocations.
func reserveHeap() {
	sink = make([]byte, heapHeadroom)
	sink = nil
	runtime.GC()
}

// Dispatch runs the handler a request names and returns the ABI status and
// the response bytes. It is what kindgi_call does inside the module.
func Dispatch(req []byte) (status wire.Status, resp []byte) {
	return dispatch(req, nil, nil, false)
}

// dispatch is Dispatch. f is where the request's fields lie, as packd
// found them (nil: read the request; not nil: alias is set). A tool's
// handler gets ctx as its Context, or a new one when ctx is nil; alias:
// see decodeRequest.
func dispatch(req []byte, f *fields, ctx *Context, alias bool) (status wire.Status, resp []byte) {
	var r request // on the stack: encoding/json gets one of its own
	ok, inputAsIs := f != nil, false
	if ok {
		r, inputAsIs = f.request(req)
	} else {
		ok, inputAsIs = decodeRequest(req, &r, alias)
	}
	if !ok {
		slow := new(request)
		if err := json.Unmarshal(req, slow); err != nil {
			return thrown(&Error{Name: "TypeError", Message: "guest could not read the request: " + err.Error()})
		}
		r = *slow
	}
	var asIs json.RawMessage
	if inputAsIs {
		asIs = r.Input
	}
	hs := registered.Load()
	switch r.Kind {
	case wire.KindInvoke:
		h, own := hs.tools[r.Tool.ID]
		if !own {
			h = hs.anyTool
		}
		if h.none() {
			return wire.StatusNoHandler, nil
		}
		if ctx == nil {
			ctx = new(Context)
		}
		return runTool(h, &r, req, f, ctx, alias, asIs)
	case wire.KindCheckInvoke:
		fn := hs.checks[r.Check.ID]
		if fn == nil {
			return wire.StatusNoHandler, nil
		}
		return runCheck(fn, &r)
	default:
		return thrown(&Error{Name: "TypeError", Message: fmt.Sprintf("unknown request kind %q", r.Kind)})
	}
}

// runTool runs a tool's handler h on the request r (read from req, whose
// fields lie at f; nil: not known) with ctx as its Context, and encodes
// its output (see answer). A panic in either is a throw named Panic.
// (Neither this nor runCheck is a closure run by a function that
// recovers: in a Go guest that cost a call some 800 units of fuel.)
func runTool(h toolHandler, r *request, req []byte, f *fields, ctx *Context, alias bool, asIs json.RawMessage) (status wire.Status, resp []byte) {
	defer func() {
		if p := recover(); p != nil {
			status, resp = thrownStack("Panic", fmt.Sprint(p), string(debug.Stack()))
		}
	}()
	if !readContext(req, f, r.Ctx, ctx, alias) {
		*ctx = Context{Raw: r.Ctx}
		if err := json.Unmarshal(r.Ctx, ctx); err != nil {
			return thrown(&Error{Name: "TypeError", Message: "guest could not read ctx: " + err.Error()})
		}
	}
	if h.raw != nil {
		raw, err := h.raw(r.Tool.ID, r.Input, ctx)
		return answer(nil, raw, err, asIs)
	}
	out, err := h.value(r.Tool.ID, r.Input, ctx)
	return answer(out, nil, err, asIs)
}

// runCheck runs a check's handler on the request r: runTool's for a check.
func runCheck(fn CheckFunc, r *request) (status wire.Status, resp []byte) {
	defer func() {
		if p := recover(); p != nil {
			status, resp = thrownStack("Panic", fmt.Sprint(p), string(debug.Stack()))
		}
	}()
	out, err := fn(r.Config, r.Trace)
	return answer(out, nil, err, nil)
}

// readContext reads the ctx raw of the request req, whose fields lie at
// f (nil: not known), into c; false: use encoding/json.
func readContext(req []byte, f *fields, raw json.RawMessage, c *Context, alias bool) bool {
	*c = Context{Raw: raw}
	if f != nil && f.context(req, c) {
		return true
	}
	*c = Context{Raw: raw}
	return decodeContext(raw, c, alias)
}

// answer is what a handler's output (out, or raw from a raw handler: a
// nil raw is a null output, as a nil out is) or its error err answers.
// asIs, when not nil, is the request's input, known to marshal as it is:
// a handler that answers with it (an echo) has it sent without a second
// look. (One that wrote into those bytes first could send JSON that is
// not; packd refuses such an output as it refuses any a guest writes.)
func answer(out any, raw json.RawMessage, err error, asIs json.RawMessage) (wire.Status, []byte) {
	if err != nil {
		return thrown(err)
	}
	if r, isRaw := out.(json.RawMessage); isRaw {
		if r == nil {
			return wire.StatusOK, []byte("null") // as json.Marshal has it
		}
		out, raw = nil, r
	}
	// An output that can go out as it is does, without a copy; one made
	// of JSON's own values is encoded here; anything else by json.Marshal.
	if raw != nil {
		if len(raw) > 0 && len(raw) == len(asIs) && &raw[0] == &asIs[0] || marshalsAsIs(raw) {
			return wire.StatusOK, raw
		}
		out = raw
	} else if b, ok := appendJSON(nil, out, 0); ok {
		return wire.StatusOK, b
	}
	b, err := json.Marshal(out)
	if err != nil {
		return thrown(&Error{Name: "TypeError", Message: "handler output is not JSON: " + err.Error()})
	}
	return wire.StatusOK, b
}

func thrown(err error) (wire.Status, []byte) {
	name, msg := "Error", err.Error()
	var ge *Error
	if errors.As(err, &ge) {
		name, msg = ge.Name, ge.Message
	}
	return thrownStack(name, msg, name+": "+msg)
}

func thrownStack(name, msg, stack string) (wire.Status, []byte) {
	return wire.StatusThrown, wire.EncodeThrown(wire.Thrown{Name: name, Message: msg, Stack: stack})
}
