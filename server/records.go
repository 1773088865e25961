package server

import (
	"io"
	"sync"
	"time"

	"github.com/kindgi/packd/internal/ojson"
)

// Recorder writes the service's stderr records: one JSON object per line,
// starting with time, level, severity, subsystem and message, then the
// correlation fields that are present, then the rest. It is safe for
// concurrent use.
type Recorder struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// NewRecorder writes records to w.
func NewRecorder(w io.Writer) *Recorder { return &Recorder{w: w, now: time.Now} }

// Field is one key and value of a record.
type Field struct {
	Key   string
	Value any // string, float64, int, bool, []string or an ojson value
}

// correlation fields, in the order they appear after message.
var correlationKeys = []string{"traceId", "spanId", "tenantId", "projectId", "orgId", "runId", "requestId", "toolId", "checkId"}

var severities = map[string]string{"info": "INFO", "warn": "WARNING", "error": "ERROR", "debug": "DEBUG"}

// Record writes one record. Correlation fields (see correlationKeys) move to
// their place after message, and are left out when empty.
func (r *Recorder) Record(level, message string, fields ...Field) {
	o := &ojson.Object{
		Keys: []string{"time", "level", "severity", "subsystem", "message"},
		Vals: []any{r.now().UTC().Format("2006-01-02T15:04:05.000Z"), level, severities[level], "pack", message},
	}
	for _, k := range correlationKeys {
		for _, f := range fields {
			if f.Key == k {
				if s, _ := f.Value.(string); s != "" {
					o.Set(k, s)
				}
			}
		}
	}
	for _, f := range fields {
		if !isCorrelation(f.Key) {
			o.Set(f.Key, f.Value)
		}
	}
	line := append(ojson.Encode(o), '\n')
	r.mu.Lock()
	_, _ = r.w.Write(line)
	r.mu.Unlock()
}

func isCorrelation(k string) bool {
	for _, c := range correlationKeys {
		if c == k {
			return true
		}
	}
	return false
}

// Lifecycle writes a lifecycle record, named in both event and kind.
func (r *Recorder) Lifecycle(kind, level, message string, fields ...Field) {
	r.Record(level, message, append([]Field{{"event", kind}, {"kind", kind}}, fields...)...)
}

// Writer returns a writer that shares the recorder's lock, so whole lines
// written through it (guest stderr) never interleave with records.
func (r *Recorder) Writer() io.Writer { return lockedWriter{r} }

type lockedWriter struct{ r *Recorder }

func (l lockedWriter) Write(p []byte) (int, error) {
	l.r.mu.Lock()
	defer l.r.mu.Unlock()
	return l.r.w.Write(p)
}
