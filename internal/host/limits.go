package host

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/host/internal/egress"
	"github.com/kindgi/packd/internal/ojson"
	"github.com/kindgi/packd/internal/sandbox"
)

// Limits are what bounds the calls of one tool or check: read once from its
// index entry (its limits and network objects), checked once at load, and
// applied to every call through request and (*Pack).run.
//
// To add a limit: a field here, its reader in readLimits, its load check in
// limitProblems (if it has one), and where a call applies it: request
// (the sandbox's side) or bound (the clock); then host/index.schema.json and docs/index-format.md, whose test
// holds the two to the same answer.
type Limits struct {
	// CallLimits are what the sandbox bounds a call by, recorded with it:
	// Fuel is the budget of one call (0: the service's default),
	// limits.fuel, or limits.cpuMs × FuelPerMs, the lesser when both are
	// set; MemoryLimit is limits.memMB in bytes, the instance memory limit
	// of a call (0: the service's).
	sandbox.CallLimits
	// CPUTime is limits.cpuMs: it sets Fuel and caps the pack code's run
	// by the clock at CPUDeadline(CPUTime).
	CPUTime time.Duration
	// Fresh is limits.instance "fresh": every call in a fresh instance, even
	// when the service pools instances.
	Fresh bool
	// Record is limits.record: RecordYes (true) records the target's calls
	// whenever the service records marked targets, RecordNever (false)
	// never records them, RecordDefault follows the service (RecordConfig).
	Record RecordMark
	// Network is what the code may reach over HTTP (network; none when
	// absent).
	Network egress.Policy
}

// request is the sandbox request r of one call, under l.
func (l Limits) request(r sandbox.Request) sandbox.Request {
	r.CallLimits, r.Fresh = l.CallLimits, l.Fresh
	return r
}

// bound is the context a call's pack code runs under: the call's, capped
// by the clock at CPUDeadline when limits.cpuMs is set.
func (l Limits) bound(ctx context.Context) (context.Context, func()) {
	if l.CPUTime > 0 {
		return withDeadline(ctx, CPUDeadline(l.CPUTime))
	}
	return ctx, func() {}
}

// FuelPerMs is the fuel one millisecond of limits.cpuMs buys: the fastest
// rate any guest measured here burns fuel, with room to spare (a Go guest
// echoing JSON, 21–23 units a nanosecond; plain instructions 16–19:
// sandbox's BenchmarkFuelRate). So no guest runs out of fuel before its
// cpuMs of CPU, and CPUDeadline bounds the slower burners by the clock.
const FuelPerMs = 40_000_000

// MaxCPUMs is the largest limits.cpuMs: a day.
const MaxCPUMs = 86_400_000

// CPUDeadline is how long pack code with a cpuMs budget may run by the
// clock: twice its CPU time and a second more, for host work, waits on the
// network and a busy machine.
func CPUDeadline(cpu time.Duration) time.Duration { return 2*cpu + time.Second }

// readLimits reads an index entry's limits (open otherwise: fuel, a
// positive integer up to sandbox.MaxFuel; kindgi's memMB and cpuMs,
// positive integers, memMB at most 65536 and cpuMs at most MaxCPUMs;
// instance, "fresh" or "pooled"; record, a boolean) and its network.
func (p *problemList) readLimits(o *ojson.Object, where string) Limits {
	lim := Limits{Network: p.network(o, where)}
	l, ok := o.Get("limits")
	if !ok {
		return lim
	}
	lo, ok := l.(*ojson.Object)
	if !ok {
		p.add("%s \"limits\" must be an object", where)
		return lim
	}
	p.budgets(lo, where, &lim)
	if v, ok := lo.Get("instance"); ok {
		if v != "fresh" && v != "pooled" {
			p.add(`%s limits.instance must be "fresh" or "pooled"`, where)
		}
		lim.Fresh = v == "fresh"
	}
	if v, ok := lo.Get("record"); ok {
		switch v {
		case true:
			lim.Record = RecordYes
		case false:
			lim.Record = RecordNever
		default:
			p.add("%s limits.record must be true or false", where)
		}
	}
	return lim
}

// budgets reads limits.memMB, limits.cpuMs and limits.fuel into lim.
func (p *problemList) budgets(lo *ojson.Object, where string, lim *Limits) {
	integer := func(key string, max float64) (int64, bool) {
		v, ok := lo.Get(key)
		if !ok {
			return 0, false
		}
		n, isNum := v.(float64)
		if !isNum || n != math.Trunc(n) || n < 1 || n > max {
			p.add("%s limits.%s must be an integer from 1 to %.0f", where, key, max)
			return 0, false
		}
		return int64(n), true
	}
	if mb, ok := integer("memMB", 65536); ok {
		lim.MemoryLimit = mb << 20
	}
	if ms, ok := integer("cpuMs", MaxCPUMs); ok {
		lim.CPUTime = time.Duration(ms) * time.Millisecond
		lim.Fuel = ms * FuelPerMs
	}
	f, ok := lo.Get("fuel")
	if !ok {
		return
	}
	n, isNum := f.(float64)
	if !isNum || n != math.Trunc(n) || math.Abs(n) >= 1<<63 {
		n = 0 // not an int64: refused below, in the same words
	}
	if err := sandbox.ValidateFuel(int64(n)); err != nil {
		p.add("%s limits.fuel %v", where, err)
		return
	}
	if lim.Fuel == 0 || int64(n) < lim.Fuel {
		lim.Fuel = int64(n)
	}
}

// network reads a network policy: {"kind": "none"}, {"kind":
// "unrestricted"} or {"kind": "allowlist", "hosts": [...]}, open to other
// keys; none when absent.
func (p *problemList) network(o *ojson.Object, where string) egress.Policy {
	no := p.object(o, "network", where)
	if no == nil {
		return egress.Policy{Kind: egress.KindNone}
	}
	kind, _ := no.Get("kind")
	pol := egress.Policy{Kind: egress.KindNone}
	switch kind {
	case egress.KindNone, egress.KindUnrestricted, egress.KindAllowlist:
		pol.Kind = kind.(string)
	default:
		p.add(`%s network.kind must be "none", "unrestricted" or "allowlist"`, where)
	}
	hosts, ok := no.Get("hosts")
	if !ok {
		if pol.Kind == egress.KindAllowlist {
			p.add(`%s network of kind "allowlist" is missing "hosts"`, where)
		}
		return pol
	}
	arr, isArr := hosts.([]any)
	if !isArr {
		p.add("%s network.hosts must be an array of host names", where)
		return pol
	}
	for i, h := range arr {
		s, _ := h.(string)
		if m := envHost.FindStringSubmatch(s); m != nil {
			if pol.Kind == egress.KindAllowlist {
				pol.HostsFromEnv = append(pol.HostsFromEnv, m[1])
			}
			continue
		}
		if err := egress.ValidateHost(s); err != nil {
			p.add("%s network.hosts[%d] %s %s", where, i, ojson.Encode(h), err)
			continue
		}
		if pol.Kind == egress.KindAllowlist {
			pol.Hosts = append(pol.Hosts, strings.ToLower(strings.TrimSuffix(s, ".")))
		}
	}
	pol.Idempotency = p.idempotency(no, pol, where)
	pol.Credentials = p.credentials(no, pol, where)
	return pol
}

// envHost is a network.hosts entry naming a process variable whose
// value's host the tool may reach: "${env.NAME}".
var envHost = regexp.MustCompile(`^\$\{env\.([A-Za-z_][A-Za-z0-9_]*)\}$`)

// resolveEnvHosts puts into each target's allowlist the hosts its
// network.hosts names by process variable ("${env.CRM_URL}"): the host of
// the variable's value (a URL, or a host name with or without a port), as
// the process has it at load. Each such variable must be one the index's
// env declares, set, and name a host; else it is a load problem.
func resolveEnvHosts(idx *Index, lookup func(string) (string, bool)) []string {
	var problems []string
	resolve := func(id string, pol *egress.Policy) {
		for _, name := range pol.HostsFromEnv {
			where := fmt.Sprintf("%s: network.hosts names ${env.%s}", id, name)
			if !slices.Contains(idx.EnvRequired, name) && !slices.Contains(idx.EnvOptional, name) {
				problems = append(problems, where+", which the index's env does not declare (env.required or env.optional)")
				continue
			}
			v, ok := lookup(name)
			if !ok || v == "" {
				problems = append(problems, where+", which is not set")
				continue
			}
			host := v
			if strings.Contains(v, "://") {
				host = ""
				if u, err := url.Parse(v); err == nil {
					host = u.Hostname()
				}
			} else if h, _, err := net.SplitHostPort(v); err == nil {
				host = h
			}
			host = strings.ToLower(strings.TrimSuffix(host, "."))
			if err := egress.ValidateHost(host); err != nil || strings.HasPrefix(host, "*.") {
				problems = append(problems, fmt.Sprintf("%s, whose value %q names no host: give a URL (https://api.example.com) or a host name", where, v))
				continue
			}
			pol.Hosts = append(pol.Hosts, host)
		}
	}
	for _, t := range idx.Tools {
		resolve(t.ID, &t.Limits.Network)
	}
	for _, g := range idx.Guardrails {
		resolve(g.InvokeID(), &g.Limits.Network)
	}
	return problems
}

// credentials reads network.credentials: by host the tool may reach,
// {"secret": name} (a key of the call's ctx.secrets) or {"env": name} (a
// process variable the index declares), with "header" (default
// Authorization) and "scheme" (e.g. "Bearer").
func (p *problemList) credentials(no *ojson.Object, pol egress.Policy, where string) map[string]egress.Credential {
	v, ok := no.Get("credentials")
	if !ok {
		return nil
	}
	o, isObj := v.(*ojson.Object)
	if !isObj {
		p.add(`%s network.credentials must be an object of hosts, each {"secret": name} or {"env": name}`, where)
		return nil
	}
	out := map[string]egress.Credential{}
	for i, host := range o.Keys {
		at := fmt.Sprintf("%s network.credentials[%q]", where, host)
		if !p.reachable(pol, host, at) {
			continue
		}
		e, isObj := o.Vals[i].(*ojson.Object)
		if !isObj {
			p.add(`%s must be {"secret": name} or {"env": name}, with "header" and "scheme" if need be`, at)
			continue
		}
		p.keys(e, at, keySet("secret", "env", "header", "scheme"))
		str := func(key string) string {
			x, _ := e.Get(key)
			s, isStr := x.(string)
			if _, present := e.Get(key); present && (!isStr || s == "") {
				p.add("%s %s must be a non-empty string", at, key)
			}
			return s
		}
		c := egress.Credential{Secret: str("secret"), Env: str("env"), Header: str("header"), Scheme: str("scheme")}
		if (c.Secret == "") == (c.Env == "") {
			p.add(`%s names "secret" or "env": exactly one`, at)
		}
		if c.Env != "" && !envName.MatchString(c.Env) {
			p.add("%s env %q is not an environment name", at, c.Env)
		}
		if c.Header == "" {
			c.Header = "Authorization"
		}
		if !egress.ValidHeaderName(c.Header) {
			p.add("%s header %q is not a header name packd may write", at, c.Header)
		}
		if c.Scheme != "" && !egress.ValidToken(c.Scheme) {
			p.add("%s scheme %q is not a scheme (a token such as Bearer)", at, c.Scheme)
		}
		out[strings.ToLower(host)] = c
	}
	return out
}

// idempotency reads network.idempotency: by host (a name or pattern the
// policy lets the tool reach), false for no key or {"header": name} for
// the header that carries it.
func (p *problemList) idempotency(no *ojson.Object, pol egress.Policy, where string) map[string]string {
	v, ok := no.Get("idempotency")
	if !ok {
		return nil
	}
	o, isObj := v.(*ojson.Object)
	if !isObj {
		p.add(`%s network.idempotency must be an object of hosts, each false or {"header": name}`, where)
		return nil
	}
	out := map[string]string{}
	for i, host := range o.Keys {
		at := fmt.Sprintf("%s network.idempotency[%q]", where, host)
		if !p.reachable(pol, host, at) {
			continue
		}
		switch e := o.Vals[i].(type) {
		case bool:
			if e {
				p.add(`%s must be false or {"header": name}: a key is sent by default`, at)
			}
			out[strings.ToLower(host)] = ""
		case *ojson.Object:
			p.keys(e, at, keySet("header"), "header")
			name, _ := e.Get("header")
			if h, _ := name.(string); egress.ValidHeaderName(h) {
				out[strings.ToLower(host)] = h
			} else {
				p.add("%s header %s is not a header name packd may write", at, ojson.Encode(name))
			}
		default:
			p.add(`%s must be false or {"header": name}`, at)
		}
	}
	return out
}

// reachable says whether a host named in a network object's per-host
// settings is one the policy lets the tool reach (an allowlist's entry,
// or a name it allows), and adds the problem when not.
func (p *problemList) reachable(pol egress.Policy, host, at string) bool {
	if err := egress.ValidateHost(host); err != nil {
		p.add("%s: %s", at, err)
		return false
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if pol.Kind == egress.KindUnrestricted || slices.Contains(pol.Hosts, h) || !strings.HasPrefix(h, "*") && pol.Allows(h) {
		return true
	}
	p.add("%s: the host is not one this network lets the tool reach", at)
	return false
}

// target is a tool or a check, as the load checks of limits see it.
type target struct {
	id, modulePath string
	limits         Limits
}

// targets are the index's tools, then its checks (by check id).
func (idx *Index) targets() []target {
	out := make([]target, 0, len(idx.Tools)+len(idx.Guardrails))
	for _, s := range idx.Tools {
		out = append(out, target{s.ID, s.ModulePath, s.Limits})
	}
	for _, s := range idx.Guardrails {
		out = append(out, target{s.InvokeID(), s.ModulePath, s.Limits})
	}
	return out
}

// limitProblems checks every target's limits against the service and its
// module: limits.memMB neither over the service's memory limit nor under
// the module's initial memory (every target), then unrestricted network
// only when the operator allows it (every target), and a module that
// imports http_request has a tool or check that may use the network (but
// a JavaScript pack: its runtime imports it for fetch, which answers
// network-not-allowed when no tool may).
func (p *Pack) limitProblems(modules map[string]*module) []string {
	var problems []string
	targets := p.index.targets()
	for _, t := range targets {
		m, limit := modules[t.modulePath], t.limits.MemoryLimit
		switch {
		case limit == 0:
		case limit > p.sb.MemoryLimitBytes():
			problems = append(problems, fmt.Sprintf("%s: limits.memMB %d is over the service's memory limit of %d MiB (--memory-limit-mib)", t.id, limit>>20, p.sb.MemoryLimitBytes()>>20))
		case m != nil && m.mod != nil && m.mod.MinMemoryBytes() > limit:
			problems = append(problems, fmt.Sprintf("%s: limits.memMB %d is under the %d KiB of memory module %s starts with", t.id, limit>>20, m.mod.MinMemoryBytes()>>10, m.path))
		}
	}
	for _, name := range p.index.credentialEnv() {
		if !slices.Contains(p.index.EnvRequired, name) && !slices.Contains(p.index.EnvOptional, name) {
			problems = append(problems, fmt.Sprintf("network.credentials binds the environment variable %s, which the index's env does not declare (env.required or env.optional)", name))
		}
	}
	mayReach := map[string]bool{}
	for _, t := range targets {
		pol := t.limits.Network
		if pol.Kind == egress.KindUnrestricted && !p.egress.Unrestricted() {
			problems = append(problems, fmt.Sprintf("%s: network is unrestricted, which this service does not allow (--network-unrestricted)", t.id))
		}
		if pol.Kind == egress.KindUnrestricted || pol.Kind == egress.KindAllowlist && len(pol.Hosts) > 0 {
			mayReach[t.modulePath] = true
		}
	}
	for _, path := range slices.Sorted(maps.Keys(modules)) {
		if m := modules[path]; m.mod != nil && m.mod.ImportsHTTP() && !m.mod.CarriesBundle() && !mayReach[path] {
			problems = append(problems, fmt.Sprintf("%s: the module imports %s.%s, but none of its tools or checks may use the network (network in the index)",
				path, abi.ImportModule, abi.ImportHTTPRequest))
		}
	}
	return problems
}
