package host_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kindgi/packd/internal/host"
)

// TestACallOverItsMemoryShareIsRefused: a call whose instance's memory does
// not fit in the share of the account its admission granted is refused
// with RefusalTenantShare before any pack code runs; with no bound on the
// account the same call is answered, and gives back what it held.
func TestACallOverItsMemoryShareIsRefused(t *testing.T) {
	conf := loadIndex(t, filepath.Join("..", "..", "wasm-examples", "conformance", "index.json"), false)
	share := int64(64 << 10) // under the module's initial memory
	account := &host.MemoryAccount{Share: func() int64 { return share }}
	ctx := context.Background()
	admit := func(host.Call) (host.Grant, error) {
		return host.Grant{Memory: account}, nil
	}
	body := []byte(`{"v":2,"kind":"invoke","tool":{"id":"conformance.echo"},"input":{"message":"hi"},"ctx":{"tenantId":"t","runId":"r"}}`)
	if o := conf.Dispatch(ctx, host.Request{Body: body, Admit: admit}); o.Refusal == nil || o.Refusal.Code != host.RefusalTenantShare || o.Response != nil {
		t.Fatalf("over its share: refusal %+v, answer %s", o.Refusal, o.Response)
	}
	share = 0
	if o := conf.Dispatch(ctx, host.Request{Body: body, Admit: admit}); o.Refusal != nil || string(o.Response) != `{"v":2,"kind":"result","output":{"message":"hi"}}` {
		t.Fatalf("unbounded: refusal %+v, answer %s", o.Refusal, o.Response)
	}
	if account.Used() != 0 {
		t.Fatalf("the account holds %d bytes after the calls", account.Used())
	}
}
