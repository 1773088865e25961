package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/service"
)

func testPack(t *testing.T) *host.Pack {
	t.Helper()
	p, _ := host.Load(context.Background(), host.Config{IndexPath: filepath.Join("..", "..", "testdata", "hostile", "index.json")})
	if p == nil {
		t.Fatal("the hostile test pack did not load")
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// newServer serves the hostile test pack: sc is its service's config, hc
// its HTTP face's (the token "tok").
func newServer(t *testing.T, sc service.Config, hc Config) *Server {
	t.Helper()
	sc.Pack = testPack(t)
	return newFace(t, sc, hc)
}

// newFace makes a service of sc (its Pack set) and its HTTP face of hc
// with the token "tok", both closed when the test ends.
func newFace(t *testing.T, sc service.Config, hc Config) *Server {
	t.Helper()
	svc, err := service.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	hc.Service, hc.Token = svc, "tok"
	s, err := New(hc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// endless is a request body that never ends, counting what was read of it.
type endless struct{ read int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	e.read += int64(len(p))
	return len(p), nil
}

func TestBodyOverTheLimitIsNeverBuffered(t *testing.T) {
	s := newServer(t, service.Config{}, Config{MaxBodyBytes: 4096})
	body := &endless{}
	req := httptest.NewRequest("POST", "/v1/invoke", io.NopCloser(body))
	req.ContentLength = -1
	req.Header.Set("kindgi-pack-token", "tok")
	req.Header.Set("content-type", "application/json")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != 413 || rec.Body.String() != `{"error":"Request body too large"}` {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	// Past the limit the body is read and dropped (for clients that write
	// all of it before reading), up to discardBytes more, and never kept:
	// the handler allocates far less than it read.
	if body.read > 4096+1+discardBytes+32<<10 {
		t.Fatalf("read %d bytes of an endless body with a 4096-byte limit", body.read)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	req = httptest.NewRequest("POST", "/v1/invoke", io.NopCloser(&endless{}))
	req.ContentLength = -1
	req.Header.Set("kindgi-pack-token", "tok")
	req.Header.Set("content-type", "application/json")
	s.Handler().ServeHTTP(httptest.NewRecorder(), req)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Fatalf("%d bytes allocated to refuse an endless body", got)
	}
}

// TestADeclaredLengthIsNotAllocatedBeforeItArrives: a caller that
// declares a body of the limit and sends a few bytes of it does not make
// the server hold the whole declared length.
func TestADeclaredLengthIsNotAllocatedBeforeItArrives(t *testing.T) {
	s := newServer(t, service.Config{}, Config{MaxBodyBytes: 8 << 20})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	req := httptest.NewRequest("POST", "/v1/invoke", strings.NewReader(`{"v":2,`))
	req.ContentLength = 8 << 20
	req.Header.Set("kindgi-pack-token", "tok")
	req.Header.Set("content-type", "application/json")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	runtime.ReadMemStats(&after)
	if !strings.Contains(rec.Body.String(), `"error"`) {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 2<<20 {
		t.Fatalf("%d bytes allocated for a body that sent 7 of its 8 MiB", got)
	}
}

func TestPanicInAHandlerIs500AndTheServerLivesOn(t *testing.T) {
	s := newServer(t, service.Config{}, Config{})
	s.Echo().GET("/boom", func(echo.Context) error { panic("handler bug") })
	for i := 0; i < 2; i++ {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/boom", nil))
		if rec.Code != 500 || rec.Body.String() != `{"error":"Internal error"}` {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 200 {
		t.Fatalf("healthz after panics: %d", rec.Code)
	}
}

func TestSlowHeadersAreCut(t *testing.T) {
	s := newServer(t, service.Config{}, Config{ReadHeaderTimeout: 200 * time.Millisecond})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n")) // and never the end of the headers
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	_, err = io.ReadAll(conn)
	if err != nil || time.Since(start) > 5*time.Second {
		t.Fatalf("the connection was not closed by the server: %v after %v", err, time.Since(start))
	}
}

func TestTimeoutHeader(t *testing.T) {
	cases := map[string]time.Duration{
		"":                     0, // none named: host.DefaultTimeout
		"250":                  250 * time.Millisecond,
		"0":                    0,
		"-5":                   0,
		"1.5":                  0,
		" 100":                 0,
		"99999999999999999999": 0,
		"999999999999":         host.MaxTimeout + time.Millisecond, // host bounds it
	}
	for h, want := range cases {
		if got := timeoutFrom(h); got != want {
			t.Errorf("timeoutFrom(%q) = %v, want %v", h, got, want)
		}
	}
}

func TestDrainWaitsForInFlightThenCloses(t *testing.T) {
	s := newServer(t, service.Config{DrainTimeout: 5 * time.Second}, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	result := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", base+"/v1/invoke", strings.NewReader(
			`{"v":2,"kind":"invoke","tool":{"id":"hostile.loop"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`))
		req.Header.Set("kindgi-pack-token", "tok")
		req.Header.Set("content-type", "application/json")
		req.Header.Set("kindgi-timeout-ms", "700")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			result <- -1
			return
		}
		resp.Body.Close()
		result <- resp.StatusCode
	}()
	for i := 0; i < 100 && s.svc.InFlight() == 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if s.svc.InFlight() != 1 {
		t.Fatal("the call never started")
	}
	start := time.Now()
	if err := s.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code := <-result; code != 200 {
		t.Fatalf("the in-flight call got %d", code)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("drain took %v for a call with a 700 ms deadline", took)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// TestADrainEndsTheCallsItCuts: a call still running when the drain's
// timeout passes (hostile.loop with a deadline of a minute) is cancelled,
// and answers `cancelled` with its call record and a hook's event before
// Drain returns, as every dispatched call does; before, its connection
// was closed under it, with no answer, no record and no audit line.
func TestADrainEndsTheCallsItCuts(t *testing.T) {
	var log bytes.Buffer
	var mu sync.Mutex
	var events []service.Event
	rec := service.NewLog(&syncWriter{w: &log, mu: &mu})
	s := newServer(t, service.Config{DrainTimeout: 300 * time.Millisecond, Log: rec, Hooks: []service.Hook{service.CallLines(rec), service.HookFunc(func(e service.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})}}, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	answer := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/v1/invoke", strings.NewReader(
			`{"v":2,"kind":"invoke","tool":{"id":"hostile.loop"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`))
		req.Header.Set("kindgi-pack-token", "tok")
		req.Header.Set("content-type", "application/json")
		req.Header.Set("kindgi-timeout-ms", "60000")
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			answer <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answer <- fmt.Sprintf("%d %s", resp.StatusCode, b)
	}()
	for i := 0; i < 100 && s.svc.InFlight() == 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if s.svc.InFlight() != 1 {
		t.Fatal("the call never started")
	}
	if err := s.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	said := log.String()
	got := slices.Clone(events)
	mu.Unlock()
	if len(got) != 1 || got[0].Outcome != "cancelled" {
		t.Fatalf("the hooks saw %+v by the drain's end", got)
	}
	if !strings.Contains(said, `"kind":"drain-cut"`) || !strings.Contains(said, `"outcome":"cancelled"`) {
		t.Fatalf("the records: %s", said)
	}
	if a := <-answer; !strings.HasPrefix(a, "200 ") || !strings.Contains(a, `"code":"cancelled"`) {
		t.Fatalf("the cut call's answer: %s", a)
	}
}

type syncWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// TestSlowBodiesDoNotHoldTheCap: eight clients trickling their bodies do not
// take the eight slots of the cap (on main they did, and every other call
// got 503), and a body slower than BodyTimeout is refused with 408.
func TestSlowBodiesDoNotHoldTheCap(t *testing.T) {
	s := newServer(t, service.Config{MaxConcurrency: 8}, Config{BodyTimeout: 2 * time.Second})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	var slow []net.Conn
	for i := 0; i < 8; i++ {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, _ = conn.Write([]byte("POST /v1/invoke HTTP/1.1\r\nHost: x\r\nkindgi-pack-token: tok\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"))
		slow = append(slow, conn)
	}
	time.Sleep(100 * time.Millisecond) // let the server read their headers
	body := `{"v":2,"kind":"invoke","tool":{"id":"hostile.counter"},"input":{},"ctx":{"tenantId":"t","runId":"r"}}`
	req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/v1/invoke", strings.NewReader(body))
	req.Header.Set("kindgi-pack-token", "tok")
	req.Header.Set("content-type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a ninth call beside eight slow bodies: %d %s", resp.StatusCode, got)
	}
	_ = slow[0].SetReadDeadline(time.Now().Add(20 * time.Second))
	answer, _ := io.ReadAll(slow[0])
	if !bytes.Contains(answer, []byte("408 Request Timeout")) || !bytes.Contains(answer, []byte(`{"error":"Request body too slow"}`)) {
		t.Fatalf("a body slower than its timeout: %q", answer)
	}
}
