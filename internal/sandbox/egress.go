package sandbox

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/url"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/kindgi/packd/abi"
)

// Egress sends a call's outbound HTTP requests (Request.Egress): the host
// decides what the call may reach and how much it may send and receive.
// Do is called on the guest's goroutine, one request at a time; it returns
// the answer and the whole response body (nil with an answer whose Error
// says why there is none), and returns at once when ctx is done. body is
// the guest's memory, as long as the guest asked: Do checks its length
// before it copies what it sends, and keeps nothing of it.
type Egress interface {
	Do(ctx context.Context, req *abi.HTTPRequest, body []byte) (*abi.HTTPAnswer, []byte)
}

const (
	// httpRequestCost is what sending a request costs the guest in fuel,
	// besides the bytes it copies: about the host's CPU time for one
	// request on a kept-alive connection (ns ≈ units, see FuelPace).
	httpRequestCost = 100_000
	// maxHTTPHead bounds the JSON of a request's method, URL and headers.
	maxHTTPHead = 64 << 10
)

// httpRequest sends one request (abi.ImportHTTPRequest) and returns the
// length of its answer and of the response body (answer | body<<32), which
// http_response_read then copies.
func httpRequest(ctx context.Context, mod api.Module, stack []uint64) {
	st := stateFrom(ctx)
	headPtr, headLen, bodyPtr, bodyLen := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	head := read(mod, abi.ImportHTTPRequest, headPtr, headLen)
	body := read(mod, abi.ImportHTTPRequest, bodyPtr, bodyLen)
	charge(ctx, mod, httpRequestCost+int64(headLen)>>copyShift+int64(bodyLen)>>copyShift)
	st.httpAnswer, st.httpBody = nil, nil
	// The head is read once, and only within its bound.
	var req abi.HTTPRequest
	parsed := headLen <= maxHTTPHead && json.Unmarshal(head, &req) == nil
	// On a tape: the request by its hash (and, in words, its method and
	// URL), the answer and the body as the host gave them. A replayed
	// call never reaches the network.
	var arg uint64
	var detail string
	if st.record != nil || st.replay != nil {
		arg, detail = requestKey(head, body, &req, parsed)
	}
	if st.replay != nil {
		a, err := st.replay.take(abi.ImportHTTPRequest, arg, detail, -1, st.fuelUsed())
		if err != nil {
			panic(err)
		}
		if len(a.Value) < 4 || uint64(binary.LittleEndian.Uint32(a.Value))+4 > uint64(len(a.Value)) {
			panic(fmt.Errorf("sandbox: the tape's answer to http_request %s is malformed", detail))
		}
		n := binary.LittleEndian.Uint32(a.Value)
		st.httpAnswer, st.httpBody = a.Value[4:4+n], a.Value[4+n:]
		stack[0] = uint64(len(st.httpAnswer)) | uint64(len(st.httpBody))<<32
		return
	}
	var ans *abi.HTTPAnswer
	var resp []byte
	switch {
	case headLen > maxHTTPHead:
		ans = refusedHTTP(abi.EgressBadRequest, "the request's method, URL and headers take more than 64 KiB")
	case !parsed:
		ans = refusedHTTP(abi.EgressBadRequest, `the request is not the JSON object {"method", "url", "headers"} (see abi/GUEST-ABI.md)`)
	case st.egress == nil:
		ans = refusedHTTP(abi.EgressNotAllowed, "this call may not use the network")
	default:
		sent := time.Now()
		ans, resp = doDetached(ctx, st.egress, &req, body)
		st.waited += time.Since(sent)
	}
	if ctx.Err() != nil {
		stopForContext()
	}
	if ans == nil {
		ans = refusedHTTP(abi.EgressFailed, "no answer")
	}
	if ans.Error != nil {
		resp = nil
	}
	ans.BodyLength = len(resp)
	st.httpAnswer, _ = json.Marshal(ans)
	st.httpBody = resp
	if st.record != nil {
		v := binary.LittleEndian.AppendUint32(make([]byte, 0, 4+len(st.httpAnswer)+len(resp)), uint32(len(st.httpAnswer)))
		st.record.record(abi.ImportHTTPRequest, arg, detail, append(append(v, st.httpAnswer...), resp...), st.fuelUsed())
	}
	stack[0] = uint64(len(st.httpAnswer)) | uint64(len(st.httpBody))<<32
}

// requestKey is what a tape knows an outbound request by: a hash of its
// head and body (53 bits of FNV-1a: it tells a replay that the guest asked
// for another request, against no adversary), and its detail (requestDetail).
// The hash's work is paid for in the request's fuel.
func requestKey(head, body []byte, req *abi.HTTPRequest, parsed bool) (uint64, string) {
	h := fnv.New64a()
	h.Write(head)
	h.Write([]byte{0})
	h.Write(body)
	detail := "(not a request)"
	if parsed {
		detail = requestDetail(req)
	}
	// 53 bits: a JSON number any reader (JavaScript's too) reads exactly.
	return h.Sum64() & (1<<53 - 1), detail
}

// maxDetailBytes bounds a tape answer's Detail (310 bytes).
const maxDetailBytes = 16 + 3 + 16 + 3 + maxDetailHost + 1 + 16

const maxDetailHost = 255

// requestDetail names a request in words, bounded whatever the guest
// sent: its method, scheme and host, then "#" and a hash of the rest (its
// port, path, query and fragment, where a secret may be: a URL's user is
// never kept). A replay compares the request's hash; the detail only
// tells a reader which request it was.
func requestDetail(req *abi.HTTPRequest) string {
	method := req.Method
	if method == "" {
		method = "GET"
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return cut(method, 16) + " (not a URL)"
	}
	rest := fnv.New64a()
	rest.Write([]byte(u.Port() + " " + u.EscapedPath() + "?" + u.RawQuery + "#" + u.EscapedFragment()))
	return fmt.Sprintf("%s %s://%s #%016x", cut(method, 16), cut(u.Scheme, 16), cut(u.Hostname(), maxDetailHost), rest.Sum64())
}

// cut is s, at most n bytes of it.
func cut(s string, n int) string { return s[:min(len(s), n)] }

// httpResponseRead copies the last request's answer and response body
// (abi.ImportHTTPResponseRead), once.
func httpResponseRead(ctx context.Context, mod api.Module, stack []uint64) {
	st := stateFrom(ctx)
	if st.httpAnswer == nil {
		panic(&ABIError{Func: abi.ImportHTTPResponseRead, Reason: "no response to read: call http_request first, and read its answer once"})
	}
	charge(ctx, mod, int64(len(st.httpAnswer)+len(st.httpBody))>>copyShift)
	for _, part := range []struct {
		ptr uint32
		b   []byte
	}{{uint32(stack[0]), st.httpAnswer}, {uint32(stack[1]), st.httpBody}} {
		if len(part.b) > 0 && !mod.Memory().Write(part.ptr, part.b) {
			panic(&ABIError{Func: abi.ImportHTTPResponseRead, Reason: oob(part.ptr, uint32(len(part.b)), mod.Memory().Size())})
		}
	}
	st.httpAnswer, st.httpBody = nil, nil
}

// doDetached runs Do under a context of its own, cancelled when the
// call's is done (its deadline or cancellation): a pooled instance reuses
// its call's context, and an HTTP client's goroutines may look at a
// request's context after Do has returned. It has no deadline of its own,
// so that the call's context is always done first and the guest is
// stopped for it, as for any other host work.
func doDetached(ctx context.Context, eg Egress, req *abi.HTTPRequest, body []byte) (*abi.HTTPAnswer, []byte) {
	rctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	defer func() {
		stop()
		cancel()
	}()
	return eg.Do(rctx, req, body)
}

func refusedHTTP(reason, message string) *abi.HTTPAnswer {
	return &abi.HTTPAnswer{Error: &abi.HTTPError{Reason: reason, Message: message}}
}
