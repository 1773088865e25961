package egress

// What packd adds to a request that writes: an Idempotency-Key derived
// from the call's idempotency key, so that a call run again (resumed,
// retried, re-run after a crash) sends the same keys, and the system it
// writes to can tell a repeat from a new write.

import (
	"crypto/sha1"
	"encoding/hex"
	"net/http"
	"strconv"
)

// DefaultIdempotencyHeader is the header packd writes a request's
// idempotency key in, unless the policy renames it for the host.
const DefaultIdempotencyHeader = "Idempotency-Key"

// idempotencyNamespace is the UUID namespace of the keys packd derives
// (RFC 9562 version 5): packd's own, so that its keys never collide with
// the call's idempotencyKey or with keys derived under another namespace.
var idempotencyNamespace = [16]byte{0x3b, 0x6e, 0x2f, 0x51, 0x8c, 0x0d, 0x4e, 0x7a, 0x9b, 0x15, 0x62, 0xd4, 0xa8, 0x3f, 0x90, 0xc7}

// IdempotencyKey is the key of the ordinal-th request (1-based, every
// request the call asked for counting) of the call whose idempotencyKey is
// callKey: the version 5 UUID, under packd's namespace, of callKey, a
// slash and the ordinal in decimal.
func IdempotencyKey(callKey string, ordinal int) string {
	h := sha1.New()
	h.Write(idempotencyNamespace[:])
	h.Write([]byte(callKey + "/" + strconv.Itoa(ordinal)))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	b := make([]byte, 36)
	hex.Encode(b[0:8], u[0:4])
	hex.Encode(b[9:13], u[4:6])
	hex.Encode(b[14:18], u[6:8])
	hex.Encode(b[19:23], u[8:10])
	hex.Encode(b[24:], u[10:])
	b[8], b[13], b[18], b[23] = '-', '-', '-', '-'
	return string(b)
}

// idempotencyHeader is the header a write to host carries its key in, ""
// for none (the policy turns it off for the host).
func (p Policy) idempotencyHeader(host string) string {
	if header, ok := byHost(p.Idempotency, host); ok {
		return header
	}
	return DefaultIdempotencyHeader
}

// addIdempotencyKey writes the request's key into h when the method
// writes, the call has an idempotency key, the host's policy wants one,
// and the guest did not write one itself (its own wins: it may know the
// system's rules better).
func (k *Call) addIdempotencyKey(method, host string, h http.Header) {
	if Safe(method) || k.info.IdempotencyKey == "" {
		return
	}
	name := k.policy.idempotencyHeader(host)
	if name == "" || h.Get(name) != "" {
		return
	}
	h.Set(name, IdempotencyKey(k.info.IdempotencyKey, k.made))
}
