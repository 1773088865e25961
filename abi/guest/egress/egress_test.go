package egress_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kindgi/packd/abi/guest/egress"
)

// TestClientNatively: a pack's native tests reach their own test server
// through the same client its module uses inside packd.
func TestClientNatively(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Method+" "+r.URL.Path)
	}))
	defer srv.Close()
	resp, err := egress.Client().Get(srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "GET /x" {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
}
