package replay

// The secrets of a recorded call: which they are, their hashes, and where
// they were redacted (each form redact.Forms knows, starred at its length).

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/kindgi/packd/internal/redact"
)

// ContentHash is how packd names bytes by their content (an index, a
// module, a secret in a record): "sha256:" and the hex of their SHA-256.
func ContentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// secret is one secret value of a call, by its record name, with its
// hash.
type secret struct {
	name, value, hash string
	bound             bool // a credential packd sends: pack code never has it
}

// Secrets are a call's secrets ("ctx.secrets.NAME", "env.NAME"), and the
// forms of those long enough to be looked for (redact.Set: the one search
// for them). The zero value holds none.
type Secrets struct {
	list  []secret
	forms redact.Set
}

// Add adds a secret by its record name; bound says pack code never has it
// (a credential the index binds, which packd writes into the requests
// itself): a replay needs no value of it, the answers are on the tape.
func (s *Secrets) Add(name, value string, bound bool) {
	s.list = append(s.list, secret{name: name, value: value, hash: ContentHash([]byte(value)), bound: bound})
	s.forms.Add(name, value, minRedacted)
}

// Env are the secrets of a call that are the pack's, not the call's: the
// environment's values (a snapshot's initialisation saw them).
func (s *Secrets) Env() *redact.Set {
	var set redact.Set
	for _, sec := range s.list {
		if strings.HasPrefix(sec.name, "env.") {
			set.Add(sec.name, sec.value, minRedacted)
		}
	}
	return &set
}

// Hash is the hash of the secret of that name, as Add made it (one it
// was not given is hashed here).
func (s *Secrets) Hash(name, value string) string {
	for _, sec := range s.list {
		if sec.name == name {
			return sec.hash
		}
	}
	return ContentHash([]byte(value))
}

// Record lists them as a record holds them: name, hash and length.
func (s *Secrets) Record() []Secret {
	var out []Secret
	for _, sec := range s.list {
		out = append(out, Secret{Name: sec.name, SHA256: sec.hash, Length: len(sec.value), Bound: sec.bound})
	}
	return out
}

// minRedacted: a secret shorter than this is hashed, but not looked for
// in the bytes a record holds (it would match what is not it).
const minRedacted = 4

// Bound makes max the record's per-call bound: the redactions it may hold
// count against it, and Encode refuses a file larger than it and
// OverheadBytes.
func (r *Record) Bound(max int) {
	r.max = max
	r.room = max / redactionCost
}

// Overflowed says the record needed more redactions than its bound holds:
// it is not to be kept.
func (r *Record) Overflowed() bool { return r.overflow }

// Redact replaces every occurrence in b of a secret, in every form
// redact.Forms knows (its value, inside a JSON string, percent-encoded),
// with asterisks of its length, and notes where (in: "guestRequest",
// "tape/N", ...) while the record has room.
func (r *Record) Redact(in string, b []byte, secrets *Secrets) []byte {
	secrets.forms.Each(b, func(at int, name string, f redact.Form) bool {
		if r.room--; r.room < 0 {
			r.overflow = true
			return false
		}
		for j := range f.Text {
			b[at+j] = '*'
		}
		r.Redactions = append(r.Redactions, Redaction{In: in, Offset: at, Length: len(f.Text), Secret: name, Form: f.Kind})
		return true
	})
	return b
}
