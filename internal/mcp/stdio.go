package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/kindgi/packd/internal/host"
)

// A client that writes its requests and closes stdin (a one-shot pipe:
// printf … | packd mcp) is owed its answers. The SDK's stdio connection
// takes stdin's end as the session's and refuses to write the answers it
// has not written yet (modelcontextprotocol/go-sdk#1061), so the face
// reads stdin through an answeredReader that holds the end back until
// every request read has been answered or cancelled, the session's
// context ends, stdout fails, or nothing has been written for
// stdioQuiet.

// stdioQuiet is how long the end of stdin waits with answers owed and
// nothing written: past any call's default deadline.
const stdioQuiet = host.DefaultTimeout + 30*time.Second

// stdioLedger is what a stdio session's client asked and was answered.
type stdioLedger struct {
	mu      sync.Mutex
	changed chan struct{}   // closed, and replaced, at every change
	owed    map[string]bool // the ids of requests read and not answered
	unread  int             // requests too long to read an id from
	broken  bool            // stdout failed: no answer will come
}

func newStdioLedger() *stdioLedger {
	return &stdioLedger{changed: make(chan struct{}), owed: map[string]bool{}}
}

// cancelled is the notification after which no answer comes.
const cancelled = "notifications/cancelled"

// rpcHead is what the ledger reads of a JSON-RPC message.
type rpcHead struct {
	id      string  // "" for none or null
	method  *string // nil: an answer
	cancels string  // a cancellation's requestId
}

// rpcHeads are the messages of one line (one, or a batch's), each read
// only as far as the ledger needs.
func rpcHeads(line []byte) []rpcHead {
	line = bytes.TrimSpace(line)
	raws := []json.RawMessage{line}
	if len(line) > 0 && line[0] == '[' && json.Unmarshal(line, &raws) != nil {
		return nil
	}
	var heads []rpcHead
	for _, raw := range raws {
		if h, ok := readHead(raw); ok {
			heads = append(heads, h)
		}
	}
	return heads
}

// readHead reads a message's id and method, and stops there: an answer's
// result and a request's params (a tool's whole input or output) are not
// read, but a cancellation's are.
func readHead(raw []byte) (rpcHead, bool) {
	var h rpcHead
	var id, params json.RawMessage
	answer := false
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return h, false
	}
	for dec.More() && !(id != nil && (answer || h.method != nil && *h.method != cancelled)) {
		t, err := dec.Token()
		key, isKey := t.(string)
		if err != nil || !isKey {
			return h, false
		}
		var into any = &json.RawMessage{} // a value the ledger skips
		switch key {
		case "id":
			into = &id
		case "method":
			into = &h.method
		case "params":
			into = &params
		case "result", "error":
			if answer = true; id != nil {
				continue // its value is not read
			}
		}
		if dec.Decode(into) != nil {
			return h, false
		}
	}
	h.id = idOf(id)
	if h.method != nil && *h.method == cancelled {
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(params, &p) == nil {
			h.cancels = idOf(p.RequestID)
		}
	}
	return h, true
}

// idOf is an id as a key ("" for none or null).
func idOf(raw json.RawMessage) string {
	var b bytes.Buffer
	if len(raw) == 0 || json.Compact(&b, raw) != nil || b.String() == "null" {
		return ""
	}
	return b.String()
}

// update changes the ledger under its lock and says it changed.
func (l *stdioLedger) update(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
	close(l.changed)
	l.changed = make(chan struct{})
}

// asked notes a line the client wrote (too long: whole is false).
func (l *stdioLedger) asked(line []byte, whole bool) {
	var heads []rpcHead
	if whole {
		heads = rpcHeads(line)
	}
	l.update(func() {
		if !whole {
			l.unread++
		}
		for _, h := range heads {
			switch {
			case h.method == nil:
			case *h.method == cancelled:
				delete(l.owed, h.cancels)
			case h.id != "":
				l.owed[h.id] = true
			}
		}
	})
}

// answered notes a line packd wrote (too long: whole is false, and it
// counts as an answer).
func (l *stdioLedger) answered(line []byte, whole bool) {
	heads := []rpcHead{{}}
	if whole {
		heads = rpcHeads(line)
	}
	l.update(func() {
		for _, h := range heads {
			if h.method != nil { // packd's own request or notification
				continue
			}
			if l.owed[h.id] {
				delete(l.owed, h.id)
			} else if l.unread > 0 {
				l.unread--
			}
		}
	})
}

// settled waits until nothing is owed, stdout broke, ctx ends or nothing
// was written for quiet.
func (l *stdioLedger) settled(ctx context.Context, quiet time.Duration) {
	for {
		l.mu.Lock()
		done := l.broken || len(l.owed)+l.unread == 0
		changed := l.changed
		l.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-time.After(quiet):
			return
		}
	}
}

// lines splits a stream into lines, each whole up to max bytes; a longer
// one is said once, not whole, and not kept.
type lines struct {
	buf  []byte
	over bool
	max  int
	each func(line []byte, whole bool)
}

func (s *lines) feed(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if !s.over && len(s.buf)+len(part) > s.max {
			s.over, s.buf = true, nil
		}
		if !s.over {
			s.buf = append(s.buf, part...)
		}
		if i < 0 {
			return
		}
		s.end()
		p = p[i+1:]
	}
}

// end ends the line being read, if any.
func (s *lines) end() {
	if s.over || len(bytes.TrimSpace(s.buf)) > 0 {
		s.each(s.buf, !s.over)
	}
	s.buf, s.over = s.buf[:0], false
}

// answeredReader is stdin, whose end waits for the answers owed.
type answeredReader struct {
	ctx context.Context
	r   io.ReadCloser
	l   *stdioLedger
	in  lines
}

func (a *answeredReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	a.in.feed(p[:n])
	if err == io.EOF {
		if n > 0 {
			return n, nil // the end comes with the next read
		}
		a.in.end() // a last line with no newline
		a.l.settled(a.ctx, stdioQuiet)
	}
	return n, err
}

func (a *answeredReader) Close() error { return a.r.Close() }

// answeringWriter is stdout, whose answers the ledger counts.
type answeringWriter struct {
	mu  sync.Mutex
	w   io.WriteCloser
	l   *stdioLedger
	out lines
}

func (a *answeringWriter) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, err := a.w.Write(p)
	a.out.feed(p[:n])
	if err != nil {
		a.l.update(func() { a.l.broken = true })
	}
	return n, err
}

func (a *answeringWriter) Close() error { return a.w.Close() }

// stdioPipes are in and out for a stdio session whose end waits for its
// answers.
func stdioPipes(ctx context.Context, in io.ReadCloser, out io.WriteCloser, maxLine int) (io.ReadCloser, io.WriteCloser) {
	l := newStdioLedger()
	r := &answeredReader{ctx: ctx, r: in, l: l}
	r.in = lines{max: maxLine, each: l.asked}
	w := &answeringWriter{w: out, l: l}
	w.out = lines{max: maxLine, each: l.answered}
	return r, w
}
