package service

import (
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/kindgi/packd/internal/host"
)

// Metrics are packd's Prometheus metrics. Labels are bounded: tool and check
// ids only as the index names them (anything else is "unknown"), never a
// tenant id unless TenantLabel is set.
type Metrics struct {
	pack        atomic.Pointer[host.Pack] // the pack served now (setPack)
	tenantLabel bool
	tenantUsage *prometheus.CounterVec // nil without the tenant label

	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	fuel     *prometheus.HistogramVec
	// The exemplar gates of duration and fuel, by target (exemplarGate).
	durationEx, fuelEx map[string]*exemplarGate
	memory             *prometheus.HistogramVec
	// A target's series of duration, fuel and memory, once a call has
	// made it: a call then finds it without hashing its labels.
	durationBy, fuelBy, memoryBy targetSeries
	inFlight                     prometheus.Gauge
	refusals                     *prometheus.CounterVec
	hookPanics                   prometheus.Counter
	guestLines                   *prometheus.CounterVec
	poolEvents                   *prometheus.CounterVec
	poolSeries                   []atomic.Pointer[prometheus.Counter] // by poolEventLabels, once a call made it
	poolReset                    prometheus.Histogram
	poolPages                    prometheus.Histogram
	egress                       *prometheus.CounterVec
	egressRefused                *prometheus.CounterVec
	egressBytes                  *prometheus.CounterVec
	reloads                      *prometheus.CounterVec
	replayRecords                *prometheus.CounterVec
	reloadTime                   prometheus.Gauge
	compile                      *prometheus.GaugeVec
	packInfo                     *prometheus.GaugeVec
	// AuditErrors counts audit lines that could not be written (write
	// error) and AuditDropped those dropped because the writer fell behind.
	AuditErrors, AuditDropped prometheus.Counter
}

// MetricsConfig configures NewMetrics.
type MetricsConfig struct {
	Pack *host.Pack
	// Version is packd's own version, for packd_build_info.
	Version string
	// TenantLabel adds the tenant id as a label of packd_calls_total. Off by
	// default: tenant ids are unbounded.
	TenantLabel bool
	// GoCollectors adds the Go runtime and process collectors.
	GoCollectors bool
}

// GuestLineDropped counts a line of pack code output that was dropped.
func (m *Metrics) GuestLineDropped(stream string) {
	if m != nil {
		m.guestLines.WithLabelValues(stream).Inc()
	}
}

// PoolEvent counts what happened to a pooled instance.
func (m *Metrics) PoolEvent(ev host.PoolEvent) {
	if m == nil {
		return
	}
	m.poolCounter(ev).Inc()
	if ev.Kind == host.PoolReset {
		m.poolReset.Observe(ev.Seconds)
		m.poolPages.Observe(float64(ev.Pages))
	}
}

// poolEventLabels are the pool events' labels, in the order of
// Metrics.poolSeries.
var poolEventLabels = host.PoolEventLabels()

// poolCounter is the series of packd_pool_events_total of ev's kind and
// reason: every call has two events (a hit and a reset), and a series
// found by its labels was a microsecond of a call's.
func (m *Metrics) poolCounter(ev host.PoolEvent) prometheus.Counter {
	i := -1
	for j, l := range poolEventLabels {
		if l.Kind == ev.Kind && l.Reason == ev.Reason {
			i = j
			break
		}
	}
	if i < 0 || i >= len(m.poolSeries) {
		return m.poolEvents.WithLabelValues(string(ev.Kind), string(ev.Reason))
	}
	if c := m.poolSeries[i].Load(); c != nil {
		return *c
	}
	c := m.poolEvents.WithLabelValues(string(ev.Kind), string(ev.Reason))
	m.poolSeries[i].Store(&c)
	return c
}

// EgressRequest counts one outbound HTTP request of pack code.
func (m *Metrics) EgressRequest(ev host.EgressEvent) {
	if m == nil {
		return
	}
	class, status := ev.HostClass, "refused"
	if class == "" {
		class = "none"
	}
	if ev.Reason != "" {
		m.egressRefused.WithLabelValues(ev.Reason).Inc()
	} else {
		status = strconv.Itoa(ev.Status/100) + "xx"
	}
	m.egress.WithLabelValues(ev.Tool, class, status).Inc()
	m.egressBytes.WithLabelValues("sent").Add(float64(ev.BytesSent))
	m.egressBytes.WithLabelValues("received").Add(float64(ev.BytesReceived))
}

// NewMetrics registers packd's metrics on reg.
func NewMetrics(reg prometheus.Registerer, cfg MetricsConfig) (*Metrics, error) {
	m := &Metrics{tenantLabel: cfg.TenantLabel, poolSeries: make([]atomic.Pointer[prometheus.Counter], len(poolEventLabels))}
	callLabels := []string{"face", "target", "id", "outcome"}
	if cfg.TenantLabel {
		callLabels = append(callLabels, "tenant")
	}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "packd_calls_total", Help: "Calls by face (http, mcp, cli), target (tool or check), id and outcome (ok, an error code or a refusal code).",
	}, callLabels)
	durationBuckets := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 120}
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "packd_call_duration_seconds", Help: "Time from admission to answer of /v1/invoke calls, by target.",
		Buckets: durationBuckets,
	}, []string{"target"})
	fuelBuckets := prometheus.ExponentialBuckets(1e3, 10, 9)
	m.fuel = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "packd_call_fuel", Help: "Fuel burnt by the pack code of a call, by target.",
		Buckets: fuelBuckets,
	}, []string{"target"})
	m.durationEx, m.fuelEx = map[string]*exemplarGate{}, map[string]*exemplarGate{}
	for _, t := range []host.Target{host.TargetTool, host.TargetCheck} {
		m.durationEx[string(t)], m.fuelEx[string(t)] = newExemplarGate(durationBuckets), newExemplarGate(fuelBuckets)
	}
	m.memory = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "packd_instance_memory_bytes", Help: "Linear memory of a call's instance when the call ended, by target.",
		Buckets: prometheus.ExponentialBuckets(64<<10, 4, 9),
	}, []string{"target"})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "packd_calls_in_flight", Help: "Calls to /v1/invoke being served.",
	})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "packd_refusals_total", Help: "Requests refused before any pack code ran, by face (http, mcp, cli), the status the face answered with (HTTP's; 0 where a face has none) and reason.",
	}, []string{"face", "status", "reason"})
	m.hookPanics = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "packd_hook_panics_total", Help: "Dispatch hooks that panicked (recovered).",
	})
	m.guestLines = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "packd_guest_lines_dropped_total", Help: "Lines of pack code output dropped because their reader fell behind, by stream (stdout, stderr, records).",
	}, []string{"stream"})
	m.poolEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "packd_pool_events_total", Help: "Pooled instances (--pool-size): hits, misses, resets by how written pages were found (known, scan, pagemap, compare), and discards by reason (error, grown, full, idle, old, memory).",
	}, []string{"event", "reason"})
	m.poolReset = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "packd_pool_reset_seconds", Help: "Time to reset a pooled instance to its snapshot after a call.",
		Buckets: prometheus.ExponentialBuckets(1e-6, 4, 10),
	})
	m.poolPages = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "packd_pool_reset_pages", Help: "Pages of 4 KiB a reset copied back to a pooled instance: those its call wrote, or all of its memory where the system cannot tell.",
		Buckets: prometheus.ExponentialBuckets(1, 4, 10),
	})
	m.egress = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "packd_egress_requests_total", Help: "Outbound HTTP requests of pack code, by tool or check id, host class (public, allowed: a special address the operator allows, none: refused before dialling) and status class (2xx ... 5xx, or refused).",
	}, []string{"id", "host_class", "status_class"})
	m.egressRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "packd_egress_refusals_total", Help: "Outbound HTTP requests of pack code that got no response, by reason (network-not-allowed, host-not-allowed, address-not-allowed, request-limit, response-too-large, failed, ...).",
	}, []string{"reason"})
	m.egressBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "packd_egress_bytes_total", Help: "Body bytes of pack code's outbound HTTP requests, by direction (sent, received).",
	}, []string{"direction"})
	m.AuditErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "packd_audit_write_errors_total", Help: "Audit lines lost to a write error (a full disk, say).",
	})
	m.AuditDropped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "packd_audit_dropped_total", Help: "Audit lines dropped because the audit writer fell behind.",
	})
	m.replayRecords = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "packd_replay_records_total", Help: "Records of recorded calls (packd serve --record), by outcome: written, or why not: too-large, interrupted (by its deadline), overloaded, full (the directory's bound), dropped (the writer fell behind), failed (a write error).",
	}, []string{"outcome"})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "packd_reloads_total", Help: "Reloads of the pack (SIGHUP), by outcome: ok (the new pack serves) or failed (the old one goes on).",
	}, []string{"outcome"})
	m.reloadTime = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "packd_reload_seconds", Help: "Time the last reload took to load, compile and snapshot the new pack, whatever its outcome.",
	})
	m.compile = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "packd_module_compile_seconds", Help: "Time to compile each module of the pack served, when it loaded (less with a warm compilation cache).",
	}, []string{"module"})
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "packd_build_info", Help: "packd's build: always 1.",
	}, []string{"version", "goversion"})
	m.packInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "packd_pack_info", Help: "The pack being served: always 1.",
	}, []string{"pack_id", "pack_version", "artifact_version"})
	if cfg.TenantLabel {
		// Usage by tenant (a bill's figures), as many series as tenants:
		// only behind the tenant label, as packd_calls_total's.
		m.tenantUsage = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "packd_tenant_usage_total", Help: "What each tenant's calls used, by tenant and resource: fuel (units), cpu_seconds (its pack code's time, less its waits), memory_byte_seconds (peak memory × that time), egress_requests and egress_bytes (sent and received). Only with the tenant label on.",
		}, []string{"tenant", "resource"})
	}
	cs := []prometheus.Collector{m.calls, m.duration, m.fuel, m.memory, m.inFlight, m.refusals,
		m.hookPanics, m.guestLines, m.poolEvents, m.poolReset, m.poolPages, m.egress, m.egressRefused, m.egressBytes, poolInstances{m}, m.AuditErrors, m.AuditDropped, m.replayRecords, m.reloads, m.reloadTime, m.compile, build, m.packInfo}
	if m.tenantUsage != nil {
		cs = append(cs, m.tenantUsage)
	}
	if cfg.GoCollectors {
		cs = append(cs, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	version := cfg.Version
	if version == "" {
		version = "dev"
	}
	build.WithLabelValues(version, runtime.Version()).Set(1)
	if cfg.Pack != nil {
		m.setPack(cfg.Pack)
	}
	return m, nil
}

// setPack makes p the pack the metrics describe: the bounded labels, the
// pack's info and compile times, its pool instances.
func (m *Metrics) setPack(p *host.Pack) {
	m.pack.Store(p)
	m.packInfo.Reset()
	m.packInfo.WithLabelValues(p.Index().PackID, p.Index().PackVersion, p.Index().ArtifactVersion).Set(1)
	m.compile.Reset()
	for _, st := range p.ModuleStats() {
		m.compile.WithLabelValues(st.Path).Set(st.CompileSeconds)
	}
}

// reloaded counts a reload and its load time.
func (m *Metrics) reloaded(ok bool, seconds float64) {
	m.reloads.WithLabelValues(map[bool]string{true: "ok", false: "failed"}[ok]).Inc()
	m.reloadTime.Set(seconds)
}

// OnCall implements Hook.
func (m *Metrics) OnCall(e Event) {
	id := e.ID
	if p := m.pack.Load(); p != nil && !(e.Target == host.TargetTool && p.HasTool(id) || e.Target == host.TargetCheck && p.HasCheck(id)) {
		id = "unknown"
	}
	target := string(e.Target)
	if target == "" {
		target = string(host.TargetTool)
	}
	labels := []string{e.Face, target, id, e.Outcome}
	if m.tenantLabel {
		labels = append(labels, e.TenantID)
	}
	m.calls.WithLabelValues(labels...).Inc()
	observe(m.durationBy.of(m.duration, target), e.Duration.Seconds(), e.TraceID, m.durationEx[target])
	if e.Fuel > 0 {
		observe(m.fuelBy.of(m.fuel, target), float64(e.Fuel), e.TraceID, m.fuelEx[target])
	}
	if e.MemoryBytes > 0 {
		m.memoryBy.of(m.memory, target).Observe(float64(e.MemoryBytes))
	}
	if m.tenantUsage != nil && (e.Fuel > 0 || e.Egress.Requests > 0) {
		for _, r := range [...]struct {
			name string
			v    float64
		}{{"fuel", float64(e.Fuel)}, {"cpu_seconds", e.CPUSeconds}, {"memory_byte_seconds", float64(e.MemoryBytes) * e.CPUSeconds},
			{"egress_requests", float64(e.Egress.Requests)}, {"egress_bytes", float64(e.Egress.BytesSent + e.Egress.BytesReceived)}} {
			m.tenantUsage.WithLabelValues(e.TenantID, r.name).Add(r.v)
		}
	}
}

// targetSeries is a histogram's series for each target (tool, check),
// once a call has made it.
type targetSeries [2]atomic.Pointer[prometheus.Observer]

// of is vec's series for target.
func (ts *targetSeries) of(vec *prometheus.HistogramVec, target string) prometheus.Observer {
	var p *atomic.Pointer[prometheus.Observer]
	switch host.Target(target) {
	case host.TargetTool:
		p = &ts[0]
	case host.TargetCheck:
		p = &ts[1]
	default:
		return vec.WithLabelValues(target)
	}
	if o := p.Load(); o != nil {
		return *o
	}
	o := vec.WithLabelValues(target)
	p.Store(&o)
	return o
}

// observe records a value, with the trace id as an exemplar when there is
// one and the gate (nil: every one) lets it through.
func observe(o prometheus.Observer, v float64, traceID string, gate *exemplarGate) {
	if eo, ok := o.(prometheus.ExemplarObserver); ok && traceID != "" && (gate == nil || gate.take(v)) {
		eo.ObserveWithExemplar(v, prometheus.Labels{"trace_id": traceID})
		return
	}
	o.Observe(v)
}

// exemplarEvery: of the traced observations that fall in a bucket of a
// histogram, the first and then one in every exemplarEvery carries its
// trace id as the bucket's exemplar. A bucket shows only its latest
// exemplar, and making one (a map, a timestamp, the exemplar's messages)
// was most of what a traced call's metrics cost; a bucket hit rarely (the
// slow calls) still gets the first of them.
const exemplarEvery = 64

// exemplarGate counts a histogram's traced observations by bucket.
type exemplarGate struct {
	bounds []float64 // upper bounds, as the histogram's
	seen   []atomic.Uint64
}

func newExemplarGate(bounds []float64) *exemplarGate {
	return &exemplarGate{bounds: bounds, seen: make([]atomic.Uint64, len(bounds)+1)}
}

// take reports whether an observation of v carries its exemplar.
func (g *exemplarGate) take(v float64) bool {
	i, _ := slices.BinarySearch(g.bounds, v) // the first bound >= v: v's bucket, as the histogram counts it
	return g.seen[i].Add(1)%exemplarEvery == 1
}

func (m *Metrics) refused(f Face, reason string) {
	if m == nil {
		return
	}
	m.refusals.WithLabelValues(f.Name(), strconv.Itoa(f.Status(reason)), reason).Inc()
}

// poolInstances reports packd_pool_instances at each scrape.
type poolInstances struct{ m *Metrics }

var poolInstancesDesc = prometheus.NewDesc("packd_pool_instances",
	"Instances of a module with pooled instances that live now, idle or serving a call, by module.", []string{"module"}, nil)

func (c poolInstances) Describe(ch chan<- *prometheus.Desc) { ch <- poolInstancesDesc }

func (c poolInstances) Collect(ch chan<- prometheus.Metric) {
	p := c.m.pack.Load()
	if p == nil {
		return
	}
	for path, n := range p.PoolInstances() {
		ch <- prometheus.MustNewConstMetric(poolInstancesDesc, prometheus.GaugeValue, float64(n), path)
	}
}
