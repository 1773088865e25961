// Package benchload drives HTTP load for packd's side-by-side benchmarks
// (cmd/mcpbench, cmd/watchbench, cmd/loadtest): keep-alive clients that
// send one request again and again for a while, counting the answers that
// are what they should be; and the plain handler they compare packd with.
package benchload

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/ojson"
)

// Target is one request to send: its body and headers, and what an
// answer must hold.
type Target struct {
	Name, URL, Body string
	Header          http.Header
	Want            string
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}, Timeout: 30 * time.Second}

// Once sends the request once.
func (t Target) Once() error {
	req, err := http.NewRequest("POST", t.URL, strings.NewReader(t.Body))
	if err != nil {
		return err
	}
	req.Header = t.Header.Clone()
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Contains(b, []byte(t.Want)) {
		return fmt.Errorf("%d %s", res.StatusCode, b)
	}
	return nil
}

// Load sends calls from c clients for d, and answers the calls answered
// a second, how many, and the median time of one.
func (t Target) Load(c int, d time.Duration) (rate float64, calls int64, median time.Duration, err error) {
	var n atomic.Int64
	var failed atomic.Value
	var mu sync.Mutex
	var times []time.Duration
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(stop) {
				t0 := time.Now()
				if err := t.Once(); err != nil {
					failed.Store(err)
					return
				}
				mine = append(mine, time.Since(t0))
				n.Add(1)
			}
			mu.Lock()
			times = append(times, mine...)
			mu.Unlock()
		}()
	}
	begun := time.Now()
	wg.Wait()
	elapsed := time.Since(begun)
	if err, ok := failed.Load().(error); ok {
		return 0, 0, 0, fmt.Errorf("%s at c=%d: %w", t.Name, c, err)
	}
	return float64(n.Load()) / elapsed.Seconds(), n.Load(), Median(times), nil
}

// Median is the middle of ts (0 for none).
func Median(ts []time.Duration) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	s := slices.Clone(ts)
	slices.Sort(s)
	return s[len(s)/2]
}

// MedianOf is the middle of xs (the mean of the two middle ones for an
// even count; 0 for none).
func MedianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// Mean is the mean of xs.
func Mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Plain answers a tool call as packd's /v1/invoke does, without WASM,
// validation or anything else packd does: the pack token, the body, a
// parse, the input sent back as the result. It is the baseline the
// service is compared with (a plain Go net/http echo handler). A body past
// maxBody is not read past it (the server's limit, as packd's).
func Plain(token string, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Kindgi-Pack-Token") != token {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"Bad pack token"}`))
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			return
		}
		msg, err := ojson.Decode(body)
		m, ok := msg.(*ojson.Object)
		if err != nil || !ok {
			_, _ = w.Write((&abi.Error{Code: abi.CodeMalformedMessage, Message: "Request body is not valid JSON"}).Encode())
			return
		}
		input, _ := m.Get("input")
		_, _ = w.Write(abi.EncodeResult(input))
	})
}
