// Package egresstest is the loopback HTTP server the egress tests send
// pack code's requests to.
package egresstest

import (
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Server starts a loopback server, stopped when the test ends, and
// returns it with its port:
//
//	/echo      answers "METHOD BODY", and the request's Authorization in X-Seen
//	/headers   answers Name=value of the Authorization, Idempotency-Key,
//	           X-Api-Key and X-Request-Key headers it got, comma-separated
//	/redirect  redirects to its query's "to"
//	/slow      answers after 20 s, or when the client leaves
//	/huge      answers 10 MiB
//	/zheaders  answers as /headers, gzip-compressed when the request
//	           accepts gzip or its query says force=gzip, in the query's
//	           enc= encoding (named, not applied) when it names one, or
//	           named after the request's Authorization with enc=echo
//	/badline   answers a malformed header line holding the Authorization
//	/badlocation redirects to a Location that is no URL, holding it
func Server(t testing.TB) (*httptest.Server, string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/zheaders", func(w http.ResponseWriter, r *http.Request) {
		text := "Authorization=" + r.Header.Get("Authorization")
		if enc := r.URL.Query().Get("enc"); enc != "" {
			if enc == "echo" { // the request's credential, as the encoding's name
				enc = r.Header.Get("Authorization")
			}
			w.Header().Set("Content-Encoding", enc)
			io.WriteString(w, text)
			return
		}
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") && r.URL.Query().Get("force") != "gzip" {
			io.WriteString(w, text)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, text)
		zw.Close()
	})
	mux.HandleFunc("/badline", func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n%s\r\n\r\n", r.Header.Get("Authorization"))
		buf.Flush()
	})
	mux.HandleFunc("/badlocation", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "http://bad host/"+r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusFound)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen", r.Header.Get("Authorization"))
		w.Header().Set("X-Seen-Trace", r.Header.Get("Traceparent")+" "+r.Header.Get("Tracestate"))
		fmt.Fprintf(w, "%s %s", r.Method, b)
	})
	mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) {
		var seen []string
		for _, name := range []string{"Authorization", "Idempotency-Key", "X-Api-Key", "X-Request-Key"} {
			if v := r.Header.Get(name); v != "" {
				seen = append(seen, name+"="+v)
			}
		}
		io.WriteString(w, strings.Join(seen, ","))
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		chunk := strings.Repeat("x", 64<<10)
		for i := 0; i < 160; i++ {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return srv, port
}
