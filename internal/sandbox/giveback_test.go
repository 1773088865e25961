package sandbox_test

import (
	"context"
	"testing"

	"github.com/kindgi/packd/internal/sandbox"
)

// TestAResetGivesBackWhatABigCallWrote: after one call writes 4 MiB of a
// pooled instance's memory, the resets of the calls after it copy only
// what those calls wrote, however the written pages are found (the tests
// check every reset byte for byte). On main a page once written stayed
// private, and every later reset copied all 1,025 of them back.
func TestAResetGivesBackWhatABigCallWrote(t *testing.T) {
	for _, mode := range []string{"auto", "pagemap"} {
		restore := sandbox.UseReset(mode)
		events, resets := resetPages()
		sb := newSandbox(t, sandbox.Config{PoolSize: 1, PoolEvents: events})
		m := compile(t, sb, hostile("bigwrite"))
		for i, body := range []string{"{}", `{"big":true}`, "{}", "{}", "{}"} {
			if rep, err := m.Call(context.Background(), sandbox.Request{Body: []byte(body)}); err != nil || string(rep.Body) != "{}" {
				t.Fatalf("%s, call %d: %s %v", mode, i, rep.Body, err)
			}
		}
		restore()
		pages := resets()
		if len(pages) != 5 || pages[1] < 1024 {
			t.Fatalf("%s: resets copied %v pages, want the big call's 1,024 second", mode, pages)
		}
		for i, n := range pages[2:] {
			if n > 16 {
				t.Errorf("%s: the reset of small call %d after the big one found %d pages written (all: %v)", mode, i+1, n, pages)
			}
		}
	}
}
