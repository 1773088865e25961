package service

import (
	"context"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/lineq"
	"github.com/kindgi/packd/internal/ojson"
)

// Log writes the service's log on stderr: one JSON object per line,
// starting with time, level, severity, subsystem and message, then the
// correlation fields that are present, then the rest. It is safe for
// concurrent use.
type Log struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// NewLog writes log lines to w.
func NewLog(w io.Writer) *Log { return &Log{w: w, now: time.Now} }

// Field is one key and value of a log line.
type Field struct {
	Key   string
	Value any // string, float64, int, bool, []string or an ojson value
}

// correlation fields, in the order they appear after message.
// correlationKeys are the log line's fields that follow message, in order: the
// trace, the call's correlation (host.Correlation), and its tool or check.
var correlationKeys = slices.Concat([]string{"traceId", "spanId"}, host.CorrelationKeys(), []string{"toolId", "checkId"})

var severities = map[string]string{"info": "INFO", "warn": "WARNING", "error": "ERROR", "debug": "DEBUG"}

// Line writes one log line. Correlation fields (see correlationKeys) move to
// their place after message, and are left out when empty.
func (r *Log) Line(level, message string, fields ...Field) {
	line := r.format(level, message, fields...)
	r.mu.Lock()
	_, _ = r.w.Write(line)
	r.mu.Unlock()
}

// format is one log line.
func (r *Log) format(level, message string, fields ...Field) []byte {
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
	return append(ojson.Encode(o), '\n')
}

// callLine writes a call record: the bytes Record(level, message,
// callRecordFields(e)...) writes, without building the fields (a record
// is written for every call).
func (r *Log) callLine(level string, e Event) {
	ms := e.Duration.Milliseconds()
	bp := lineBufs.Get().(*[]byte)
	b := append((*bp)[:0], `{"time":"`...)
	b = appendLogTime(b, r.now())
	b = append(b, `","level":`...)
	b = ojson.AppendString(b, level)
	b = append(b, `,"severity":`...)
	b = ojson.AppendString(b, severities[level])
	b = append(b, `,"subsystem":"pack","message":`...)
	b = appendCallMessage(b, e, ms)
	for _, f := range [...]struct{ k, v string }{{"traceId", e.TraceID}, {"spanId", e.SpanID}} {
		b = appendField(b, f.k, f.v)
	}
	for _, f := range e.Correlation.Pairs() {
		b = appendField(b, f.Key, f.Value)
	}
	b = appendField(b, idKey(e.Target), e.ID)
	b = append(b, `,"event":"call","kind":"call"`...)
	b = appendField(b, "face", e.Face)
	b = append(b, `,"target":`...)
	b = ojson.AppendString(b, string(e.Target))
	b = append(b, `,"id":`...)
	b = ojson.AppendString(b, e.ID)
	if e.Version != "" {
		b = append(b, `,"version":`...)
		b = ojson.AppendString(b, e.Version)
	}
	b = append(b, `,"outcome":`...)
	b = ojson.AppendString(b, e.Outcome)
	b = append(b, `,"durationMs":`...)
	b = strconv.AppendInt(b, ms, 10)
	b = append(b, `,"fuel":`...)
	b = strconv.AppendInt(b, e.Fuel, 10)
	if g := e.Egress; g.Requests > 0 || g.Refused > 0 {
		b = append(b, `,"egress":{"requests":`...)
		b = strconv.AppendInt(b, int64(g.Requests), 10)
		b = append(b, `,"refused":`...)
		b = strconv.AppendInt(b, int64(g.Refused), 10)
		b = append(b, `,"bytesSent":`...)
		b = strconv.AppendInt(b, g.BytesSent, 10)
		b = append(b, `,"bytesReceived":`...)
		b = strconv.AppendInt(b, g.BytesReceived, 10)
		b = append(b, '}')
	}
	b = append(b, '}', '\n')
	r.mu.Lock()
	_, _ = r.w.Write(b)
	r.mu.Unlock()
	if cap(b) <= maxPooledLine {
		*bp = b
		lineBufs.Put(bp)
	}
}

// lineBufs hold the bytes of call lines being written (a writer keeps
// none: io.Writer), so that a call allocates none for its line; one that
// grew past maxPooledLine is left to the collector.
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const maxPooledLine = 4 << 10

// appendLogTime appends t in UTC as time.Format would with the layout
// 2006-01-02T15:04:05.000Z, without reading the layout.
func appendLogTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, "2006-01-02T15:04:05.000Z")
	}
	hour, minute, sec := t.Clock()
	b = appendDigits(b, year, 4)
	b = appendDigits(append(b, '-'), int(month), 2)
	b = appendDigits(append(b, '-'), day, 2)
	b = appendDigits(append(b, 'T'), hour, 2)
	b = appendDigits(append(b, ':'), minute, 2)
	b = appendDigits(append(b, ':'), sec, 2)
	b = appendDigits(append(b, '.'), t.Nanosecond()/1e6, 3)
	return append(b, 'Z')
}

// appendDigits appends v (0 <= v < 10^n) in n decimal digits.
func appendDigits(b []byte, v, n int) []byte {
	for i := n - 1; i >= 0; i-- {
		d := v
		for range i {
			d /= 10
		}
		b = append(b, byte('0'+d%10))
	}
	return b
}

// appendCallMessage appends a call line's message, a JSON string:
// "tool echo.echo ok 3ms".
func appendCallMessage(b []byte, e Event, ms int64) []byte {
	var room [128]byte
	m := append(room[:0], e.Target...)
	m = append(append(m, ' '), e.ID...)
	m = append(append(m, ' '), e.Outcome...)
	m = strconv.AppendInt(append(m, ' '), ms, 10)
	m = append(m, "ms"...)
	return ojson.AppendString(b, unsafe.String(unsafe.SliceData(m), len(m)))
}

// appendField appends ,"k":"v" to a log line being written, unless v is empty.
func appendField(b []byte, k, v string) []byte {
	if v == "" {
		return b
	}
	b = append(b, ',')
	b = ojson.AppendString(b, k)
	b = append(b, ':')
	return ojson.AppendString(b, v)
}

func isCorrelation(k string) bool {
	for _, c := range correlationKeys {
		if c == k {
			return true
		}
	}
	return false
}

// Lifecycle writes a lifecycle log line, named in both event and kind.
func (r *Log) Lifecycle(kind, level, message string, fields ...Field) {
	r.Line(level, message, append([]Field{{"event", kind}, {"kind", kind}}, fields...)...)
}

// Writer returns a writer that shares the recorder's lock, so whole lines
// written through it (guest stderr) never interleave with log lines.
func (r *Log) Writer() io.Writer { return lockedWriter{r} }

type lockedWriter struct{ r *Log }

func (l lockedWriter) Write(p []byte) (int, error) {
	l.r.mu.Lock()
	defer l.r.mu.Unlock()
	return l.r.w.Write(p)
}

// guestLines carries pack code output inside log lines of their own (event
// and kind "guest-output", the stream, the tool or check id and the tenant
// when known, the line as message), so that no line a guest writes can be
// read as one of packd's log lines. Lines are queued: a guest never waits
// for the log; what does not fit is dropped, counted by onDrop
// and reported in a "guest-output-dropped" log line.
type guestLines struct {
	r *Log
	q *lineq.Queue
}

// guestOutput starts the queue of guest-output log lines.
func (r *Log) guestOutput(onDrop func()) *guestLines {
	marker := func(n int64) []byte {
		return r.format("warn", "Pack code output was dropped: the record stream was not read fast enough",
			Field{"event", "guest-output-dropped"}, Field{"kind", "guest-output-dropped"}, Field{"lines", float64(n)})
	}
	return &guestLines{r: r, q: lineq.New(lockedWriter{r}, 0, marker, onDrop)}
}

// Line takes one line of a call's pack code output.
func (g *guestLines) Line(l host.GuestLine) {
	fields := []Field{{"tenantId", l.TenantID}, {idKey(l.Target), l.ID}}
	if l.TraceID != "" {
		fields = append(fields, Field{"traceId", l.TraceID})
	}
	g.put(l.Stream, string(l.Line), fields...)
}

func (g *guestLines) put(stream, line string, fields ...Field) {
	level := "info"
	if stream == "stderr" {
		level = "warn"
	}
	fields = append(fields, Field{"event", "guest-output"}, Field{"kind", "guest-output"}, Field{"stream", stream})
	_, _ = g.q.Write(g.r.format(level, line, fields...))
}

// Stream is a writer of whole lines for output that belongs to no call
// (a module's load-time code): each line becomes a guest-output log line.
func (g *guestLines) Stream(stream string) io.Writer { return guestStream{g, stream} }

type guestStream struct {
	g      *guestLines
	stream string
}

func (s guestStream) Write(p []byte) (int, error) {
	for _, line := range strings.SplitAfter(strings.TrimSuffix(string(p), "\n"), "\n") {
		s.g.put(s.stream, strings.TrimSuffix(line, "\n"))
	}
	return len(p), nil
}

// Close writes what is queued (waiting until ctx is done) and stops.
func (g *guestLines) Close(ctx context.Context) error { return g.q.Close(ctx) }
