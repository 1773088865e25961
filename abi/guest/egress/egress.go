// Package egress lets a Go pack send HTTP requests through packd: a
// Transport (an http.RoundTripper) over the guest ABI's http_request
// import, so that an http.Client works unchanged. packd sends a request
// only where the tool's network policy in the index allows it, and
// answers every other one with an error the handler can handle: a
// *wire.HTTPError (errors.As) whose Reason says why.
//
//	client := egress.Client()
//	resp, err := client.Get("https://api.example.com/v1/customers/42")
//
// Outside WebAssembly (native tests of a pack), Transport sends requests
// with http.DefaultTransport: no policy applies there.
package egress

import (
	"net/http"
)

// Client is an http.Client whose requests go through packd (Transport).
// Its timeout is the call's deadline; set Timeout for a shorter one.
func Client() *http.Client { return &http.Client{Transport: Transport{}} }

// Transport sends requests through packd. packd follows redirects itself
// (each checked against the policy), so a Client using it sees the final
// response. The zero value is ready to use.
type Transport struct{}

var _ http.RoundTripper = Transport{}
