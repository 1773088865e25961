package mcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kindgi/packd/internal/service"
)

// lockedBuffer is a stdout the session writes from its goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	err error // every write fails with it, when set
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) Close() error { return nil }

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

const (
	stdioInit        = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`
	stdioInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// TestAOneShotPipeGetsItsAnswers: a client that writes its requests and
// closes stdin (printf … | packd mcp) gets an answer to every one, a slow
// call's included, before the session ends; a request it cancelled is not
// waited for, nor are answers once stdout is gone. The SDK's stdio
// connection dropped them all (go-sdk#1061): the pipe got nothing.
func TestAOneShotPipeGetsItsAnswers(t *testing.T) {
	svc := servePack(t, "../../wasm-examples/conformance", conformanceTools, service.Config{})
	f, _ := serve(t, svc, Config{})
	run := func(out *lockedBuffer, input string) time.Duration {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		if err := f.ServeStdio(ctx, io.NopCloser(strings.NewReader(input)), out); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("ServeStdio: %v", err)
		}
		return time.Since(start)
	}

	var out lockedBuffer
	run(&out, strings.Join([]string{stdioInit, stdioInitialized,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"conformance.sleep","arguments":{"ms":300}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"conformance.echo","arguments":{"message":"last, with no newline"}}}`,
	}, "\n"))
	for _, want := range []string{`"id":1,"result"`, `"id":2,"result"`, `"id":"three","result"`, `"id":4,"result"`, `last, with no newline`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the pipe got no %s: %q", want, out.String())
		}
	}

	out = lockedBuffer{}
	took := run(&out, strings.Join([]string{stdioInit, stdioInitialized,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"conformance.sleep","arguments":{"ms":30000}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`,
	}, "\n")+"\n")
	if took > 15*time.Second || !strings.Contains(out.String(), `"id":1,"result"`) {
		t.Errorf("a cancelled call was waited for: %v, %q", took, out.String())
	}

	broken := lockedBuffer{err: errors.New("stdout is gone")}
	took = run(&broken, strings.Join([]string{stdioInit, stdioInitialized,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"conformance.sleep","arguments":{"ms":30000}}}`,
	}, "\n")+"\n")
	if took > 15*time.Second {
		t.Errorf("the end of stdin waited %v for answers to a stdout that is gone", took)
	}
}

// TestTheStdioLedger: what is owed after lines each way, batches, ids of
// any JSON type, packd's own requests, lines too long to read.
func TestTheStdioLedger(t *testing.T) {
	l := newStdioLedger()
	l.asked([]byte(`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"1","method":"b"}]`), true)
	l.asked([]byte(`{"jsonrpc":"2.0","id":null,"method":"c"}`), true)
	l.asked(nil, false)
	l.answered([]byte(`{"jsonrpc":"2.0","id":9,"method":"roots/list"}`), true) // packd asks the client
	if len(l.owed) != 2 || l.unread != 1 {
		t.Fatalf("owed %v, unread %d: want ids 1 and \"1\", one unread", l.owed, l.unread)
	}
	l.answered([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), true)
	l.answered([]byte(`{"jsonrpc":"2.0","id":"1","error":{"code":1,"message":"m"}}`), true)
	l.answered([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`), true)
	if len(l.owed) != 0 || l.unread != 0 {
		t.Fatalf("owed %v, unread %d after the answers", l.owed, l.unread)
	}
	var got []string
	s := lines{max: 8, each: func(line []byte, whole bool) {
		if !whole {
			line = []byte("(long)")
		}
		got = append(got, string(line))
	}}
	s.feed([]byte("ab\ncd"))
	s.feed([]byte("ef\n0123456789\n\n x\n"))
	s.feed([]byte("tail"))
	s.end()
	if strings.Join(got, "|") != "ab|cdef|(long)| x|tail" {
		t.Fatalf("lines %q", got)
	}
}
