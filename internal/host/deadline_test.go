package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/host"
)

func hostileWasm(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// slowGate takes its time, as a gate backed by a remote policy store may.
type slowGate time.Duration

func (g slowGate) Check(ctx context.Context, _ host.Call) error {
	select {
	case <-time.After(time.Duration(g)):
	case <-ctx.Done():
	}
	return nil
}

// TestTheDeadlineCoversTheWholeCall: the deadline starts once the message
// has parsed, so time spent before the guest (here a slow gate) counts; on
// main the guest got its whole deadline after it.
func TestTheDeadlineCoversTheWholeCall(t *testing.T) {
	idx := writePack(t, indexJSON(tool("hostile.counter", "", "counter.wasm"), ""), map[string][]byte{"counter.wasm": counterWasm(t)})
	p, err := load(t, idx, slowGate(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	o := p.Dispatch(context.Background(), host.Request{Body: []byte(`{"v":2,"kind":"invoke","tool":{"id":"hostile.counter"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`), Timeout: 100 * time.Millisecond})
	if o.Code != abi.CodeDeadlineExceeded {
		t.Fatalf("got %s", o.Response)
	}
}

// TestManyKeysAreAnsweredInTime: a body of 100,000 keys and a guest answer
// of 1,100,000 keys (15.4 MB) are decoded, validated and answered within
// their deadline (on main decoding them took 27 s and hours).
func TestManyKeysAreAnsweredInTime(t *testing.T) {
	idx := writePack(t, indexJSON(tool("hostile.counter", "", "counter.wasm")+","+tool("hostile.manykeys", "", "manykeys.wasm"), ""),
		map[string][]byte{"counter.wasm": counterWasm(t), "manykeys.wasm": hostileWasm(t, "manykeys")})
	p, err := load(t, idx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	in.WriteString(`{"v":2,"kind":"invoke","tool":{"id":"hostile.counter"},"ctx":{"tenantId":"t","runId":"r"},"input":{`)
	for i := 0; i < 100_000; i++ {
		fmt.Fprintf(&in, `"key%d":%d,`, i, i)
	}
	in.WriteString(`"last":true}}`)
	// Bounds loose enough for the race detector on a busy 2-core machine
	// (here: 0.1 s and 2 s), far below main's.
	for _, c := range []struct {
		name, body string
		within     time.Duration
	}{
		{"100,000-key body", in.String(), 20 * time.Second},
		{"1,100,000-key answer", `{"v":2,"kind":"invoke","tool":{"id":"hostile.manykeys"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`, 90 * time.Second},
	} {
		start := time.Now()
		o := p.Dispatch(context.Background(), host.Request{Body: []byte(c.body), Timeout: c.within})
		if !o.OK() {
			t.Fatalf("%s: %.200s", c.name, o.Response)
		}
		if d := time.Since(start); d > c.within {
			t.Errorf("%s: answered after %v", c.name, d)
		}
	}
}
