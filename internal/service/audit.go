package service

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/lineq"
	"github.com/kindgi/packd/internal/ojson"
)

// AuditLog is the hook that appends one JSON line per call to /v1/invoke,
// refusals included, to a file: who called what, and was it allowed. It
// never holds input, output, secrets or env values.
//
// Calls never wait for the disk: a line goes into a bounded queue that one
// goroutine writes out. When the queue is full the line is dropped, and when
// a write fails (a full disk) the line is lost; both are counted in metrics
// and said in a record, and the service goes on.
type AuditLog struct {
	path string     // "" for a writer given to newAuditLog
	wmu  sync.Mutex // guards w, which Reopen swaps
	w    io.WriteCloser
	// torn: the last write to w ended inside its line (a disk that filled
	// up mid-line); the next line written begins with the newline that
	// ends it, so that the cut line is never glued to a whole one.
	torn            bool
	work            *lineq.Worker[[]byte]
	metrics         *Metrics
	log             *Log
	closeOnce       sync.Once
	closeErr        error
	mu              sync.Mutex // guards the counters below
	errors, dropped int64
}

// auditQueue is how many lines may wait for the disk.
const auditQueue = 4096

// OpenAuditLog opens (creating, appending) the audit file.
func OpenAuditLog(path string, m *Metrics, r *Log) (*AuditLog, error) {
	f, err := openAppend(path, "the audit log")
	if err != nil {
		return nil, err
	}
	a := newAuditLog(f, m, r)
	a.path = path
	return a, nil
}

// Reopen opens the audit file's path anew and writes on there, closing the
// file it wrote before (logrotate renames the file, then signals): a line
// goes wholly to one file or the other. When the path cannot be opened the
// old file stays in use.
func (a *AuditLog) Reopen() error {
	if a.path == "" {
		return nil
	}
	f, err := openAppend(a.path, "the audit log again")
	if err != nil {
		return err
	}
	a.wmu.Lock()
	old := a.w
	a.w, a.torn = f, false
	a.wmu.Unlock()
	return old.Close()
}

func newAuditLog(w io.WriteCloser, m *Metrics, r *Log) *AuditLog {
	if r == nil {
		r = NewLog(io.Discard)
	}
	a := &AuditLog{w: w, metrics: m, log: r}
	a.work = lineq.NewWorker(auditQueue, a.write, nil)
	return a
}

// Egress queues the line of one outbound HTTP request of pack code: the
// tool or check, the tenant, the host, the status or why there was none,
// and the body bytes, and the artifact version of the pack it ran on;
// never a body, a header, a query or a secret.
func (a *AuditLog) Egress(ev host.EgressEvent, artifactVersion string) {
	o := &ojson.Object{}
	o.Set("time", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
	o.Set("event", "egress")
	if ev.TenantID != "" {
		o.Set("tenantId", ev.TenantID)
	}
	o.Set("id", ev.Tool)
	o.Set("host", ev.Host)
	if ev.Reason != "" {
		o.Set("refused", ev.Reason)
	} else {
		o.Set("status", float64(ev.Status))
	}
	if ev.Credential != "" {
		o.Set("credential", ev.Credential) // its source, never its value
	}
	o.Set("bytesSent", float64(ev.BytesSent))
	o.Set("bytesReceived", float64(ev.BytesReceived))
	o.Set("durationMs", float64(ev.Duration.Milliseconds()))
	o.Set("artifactVersion", artifactVersion)
	a.queue1(append(ojson.Encode(o), '\n'))
}

// OnCall implements Hook: it queues the call's line without waiting.
// A call that ends after Close (a late one, past the drain's timeout) is
// counted as dropped.
func (a *AuditLog) OnCall(e Event) { a.queue1(a.line(e)) }

// queue1 queues one line without waiting.
func (a *AuditLog) queue1(line []byte) {
	switch queued, closed := a.work.Put(line); {
	case closed:
		a.lost(&a.dropped, func(m *Metrics) prometheus.Counter { return m.AuditDropped }, "audit-dropped", "A call ended after the audit log closed")
	case !queued:
		a.lost(&a.dropped, func(m *Metrics) prometheus.Counter { return m.AuditDropped }, "audit-dropped", "The audit log fell behind")
	default: // queued
	}
}

// lost counts a lost line in *counter and in its metric, and says so in a
// record for the first loss and every thousandth after it.
func (a *AuditLog) lost(counter *int64, metric func(*Metrics) prometheus.Counter, kind, why string) {
	if a.metrics != nil {
		metric(a.metrics).Inc()
	}
	a.mu.Lock()
	*counter++
	n := *counter
	a.mu.Unlock()
	if n == 1 || n%1000 == 0 {
		a.log.Line("error", fmt.Sprintf("%s: %d audit lines lost so far", why, n),
			Field{"event", kind}, Field{"kind", kind}, Field{"lost", int(n)})
	}
}

func (a *AuditLog) line(e Event) []byte {
	o := &ojson.Object{}
	o.Set("time", e.Time.UTC().Format("2006-01-02T15:04:05.000Z"))
	set := func(k, v string) {
		if v != "" {
			o.Set(k, v)
		}
	}
	for _, f := range e.Correlation.Pairs() {
		set(f.Key, f.Value)
	}
	set("face", e.Face)
	set("target", string(e.Target))
	set(idKey(e.Target), e.ID)
	set("version", e.Version)
	o.Set("outcome", e.Outcome)
	o.Set("status", float64(e.Status))
	o.Set("durationMs", float64(e.Duration.Milliseconds()))
	o.Set("fuel", int(e.Fuel)) // an integer, exactly
	// What the usage log sums (UsageLog), each as it does.
	o.Set("cpuMs", json.RawMessage(micros(e.Usage.CPUMicros())))
	o.Set("memoryKiBMs", int(e.Usage.MemoryKiBMs()))
	o.Set("egressRequests", e.Egress.Requests)
	o.Set("egressBytes", int(e.Egress.BytesSent+e.Egress.BytesReceived))
	if len(e.Obligations) > 0 {
		b, _ := json.Marshal(e.Obligations)
		o.Set("obligations", json.RawMessage(b))
	}
	o.Set("artifactVersion", e.ArtifactVersion)
	if e.TraceID != "" {
		o.Set("traceId", e.TraceID)
	}
	return append(ojson.Encode(o), '\n')
}

// write writes one line (the worker's).
func (a *AuditLog) write(line []byte) {
	a.wmu.Lock()
	if a.torn {
		line = append([]byte{'\n'}, line...)
	}
	n, err := a.w.Write(line)
	if err == nil {
		a.torn = false
	} else if n > 0 {
		a.torn = true
	}
	a.wmu.Unlock()
	if err != nil {
		a.lost(&a.errors, func(m *Metrics) prometheus.Counter { return m.AuditErrors }, "audit-error", "Cannot write the audit log: "+err.Error())
	}
}

// Close writes out what is queued (waiting until ctx is done) and closes
// the file; a call that ends later is counted as dropped. Safe twice.
func (a *AuditLog) Close(ctx context.Context) error {
	a.closeOnce.Do(func() {
		_ = a.work.Close(ctx)
		a.wmu.Lock()
		a.closeErr = a.w.Close()
		a.wmu.Unlock()
	})
	return a.closeErr
}
