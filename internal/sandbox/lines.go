package sandbox

import (
	"bytes"
	"io"

	"github.com/kindgi/packd/internal/lineq"
)

// lineWriter collects one call's output on one stream and forwards it to its
// sink as whole lines. A line longer than maxLine is cut and marked; once the
// call has forwarded its budget, the rest is dropped with one marker line.
// Each line counts its bytes and lineOverhead, and the budget keeps room
// for the marker: what a call puts on a stream, the markers a queue writes
// before its lines included, never passes its budget.
type lineWriter struct {
	sink     lineSink
	maxLine  int
	budget   int // bytes the call may still forward
	buf      []byte
	cut      bool // the current line was already cut: drop until newline
	exceeded bool
}

const (
	truncMark   = " [packd: line truncated]\n"
	droppedMark = "[packd: output limit reached, further lines dropped]\n"
	// lineOverhead is what a line counts against its call's budget besides
	// its bytes: at least the longest marker a queue puts before a line it
	// writes after dropping others, so that a call of many tiny lines
	// cannot put more than its budget on a stream in markers.
	lineOverhead = 96
)

// Write forwards p; once the call's budget is spent, p is not even read.
func (w *lineWriter) Write(p []byte) {
	for len(p) > 0 && !w.exceeded {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !w.cut {
			room := w.maxLine - len(w.buf)
			if len(chunk) > room {
				w.buf = append(w.buf, chunk[:room]...)
				w.emit(append(w.buf, truncMark...))
				w.buf = w.buf[:0]
				w.cut = true
			} else {
				w.buf = append(w.buf, chunk...)
			}
		}
		if i < 0 {
			return
		}
		if w.cut {
			w.cut = false
		} else {
			w.emit(append(w.buf, '\n'))
			w.buf = w.buf[:0]
		}
		p = p[i+1:]
	}
}

// Flush forwards a last line that had no newline.
func (w *lineWriter) Flush() {
	if len(w.buf) > 0 && !w.cut {
		w.emit(append(w.buf, '\n'))
	}
	w.buf = w.buf[:0]
	w.cut = false
}

func (w *lineWriter) emit(line []byte) {
	if w.exceeded {
		return
	}
	cost := len(line) + lineOverhead
	if cost > w.budget-len(droppedMark) {
		w.exceeded = true
		w.sink.emit([]byte(droppedMark))
		return
	}
	w.budget -= cost
	w.sink.emit(line)
}

// newQueue puts a line queue in front of w (nil: discard).
func newQueue(w io.Writer, stream string, dropped func(string)) *lineq.Queue {
	if w == nil {
		w = io.Discard
	}
	var onDrop func()
	if dropped != nil {
		onDrop = func() { dropped(stream) }
	}
	return lineq.New(w, 0, nil, onDrop)
}

// lineSink is where a call's lines on a stream go: the call's own output
// function when it has one, else the sandbox's queue. It never blocks.
type lineSink struct {
	output func(stream string, line []byte)
	stream string
	q      *lineq.Queue
}

func sinkFor(output func(string, []byte), stream string, q *lineq.Queue) lineSink {
	return lineSink{output: output, stream: stream, q: q}
}

func (s lineSink) emit(line []byte) {
	if s.output != nil {
		s.output(s.stream, line)
		return
	}
	_, _ = s.q.Write(line)
}
