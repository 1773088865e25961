package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/sandbox"
)

// Load a pack from its index, then dispatch a protocol message to it.
func ExamplePack_Dispatch() {
	ctx := context.Background()
	pack, err := host.Load(ctx, host.Config{
		IndexPath: filepath.Join("..", "..", "testdata", "kindgi", "index.json"),
		Sandbox:   sandbox.Config{CacheDir: filepath.Join(os.TempDir(), "packd-test-wazero-cache")},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pack.Close(ctx)
	out := pack.Dispatch(ctx, host.Request{Body: []byte(`{"v":2,"kind":"invoke","tool":{"id":"acme.ledger.record-expense"},"input":{"vendor":"v","amountCents":5},"ctx":{"tenantId":"t","runId":"r"}}`)})
	fmt.Println(string(out.Response))
	// Output: {"v":2,"kind":"result","output":{"expenseId":"exp-1"}}
}
