package egress

// Read-only tools (mutating: false in the index): packd sends what only
// reads, and nothing that asks the server to take it for a write.

import (
	"net/url"
	"strings"

	"github.com/kindgi/packd/abi"
)

// Safe reports whether a method only reads (RFC 9110, 9.2.1): GET, HEAD
// and OPTIONS, of those packd sends.
func Safe(method string) bool { return method == "GET" || method == "HEAD" || method == "OPTIONS" }

// overrides are the headers and query parameters by which servers take a
// request for another method than the one sent (Rails', Laravel's,
// Google's and others' conventions).
var overrides = []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override"}

// readOnly refuses what a read-only tool (mutating: false) may not send:
// another method than GET, HEAD and OPTIONS, a body with one of them, or
// a request that asks the server to take it for another method.
func readOnly(method string, u *url.URL, headers map[string][]string, body []byte) *abi.HTTPAnswer {
	const why = "the tool is read-only (mutating: false in the index) and sends only GET, HEAD and OPTIONS"
	switch {
	case !Safe(method):
		return refused(abi.EgressReadOnly, "%s: %s", method, why)
	case len(body) > 0:
		return refused(abi.EgressReadOnly, "a %s with a body: %s, without one", method, why)
	case u.Query().Has("_method"):
		return refused(abi.EgressReadOnly, "a _method query parameter: %s, and asks for no other method", why)
	}
	for name := range headers {
		for _, o := range overrides {
			if strings.EqualFold(name, o) {
				return refused(abi.EgressReadOnly, "header %q: %s, and asks for no other method", name, why)
			}
		}
	}
	return nil
}
