package host_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnOverLargeIssueListIsBounded: 0.77 MB of unknown keys sent to
// conformance.echo (no additional properties) answers the first 1,000
// issues and says how many more there were: 123 KB, where main answered
// 10.8 MB, one issue per key, built whole in memory.
func TestAnOverLargeIssueListIsBounded(t *testing.T) {
	conf := loadIndex(t, filepath.Join("..", "..", "wasm-examples", "conformance", "index.json"), false)
	var b strings.Builder
	b.WriteString(`{"v":2,"kind":"invoke","tool":{"id":"conformance.echo"},"ctx":{"tenantId":"t","runId":"r"},"input":{"message":"m"`)
	const keys = 128_000
	for i := 0; i < keys; i++ {
		fmt.Fprintf(&b, `,"%d":0`, i)
	}
	b.WriteString("}}")
	if b.Len() < 750_000 {
		t.Fatalf("the request is %d bytes", b.Len())
	}
	o, m := dispatch(conf, b.String())
	if len(o.Response) > 256<<10 {
		t.Fatalf("the answer is %d bytes", len(o.Response))
	}
	var e struct {
		Code, Message string
		Issues        []json.RawMessage
	}
	raw, _ := json.Marshal(m)
	_ = json.Unmarshal(raw, &e)
	want := fmt.Sprintf(`Tool "conformance.echo" input failed validation (%d more issues not listed)`, keys-1000)
	if e.Code != "input-validation-failed" || e.Message != want || len(e.Issues) != 1000 {
		t.Fatalf("%s %q, %d issues; want %q and 1000", e.Code, e.Message, len(e.Issues), want)
	}
	if first := string(e.Issues[0]); !strings.Contains(first, `"additionalProperty":"0"`) {
		t.Fatalf("first issue %s", first)
	}
}
