//go:build !wasip1

package egress

import "net/http"

// RoundTrip sends req with http.DefaultTransport: outside packd there is
// no policy to apply.
func (Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	return http.DefaultTransport.RoundTrip(req)
}
