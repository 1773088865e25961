package replay

// Records: one call, kept so that it can be re-run offline to the same
// output and the same fuel (Replayer, replayer.go). A record holds the
// request message, the module's content hash, the snapshot the call ran
// on with the tape of its initialisation, the environment's names, what
// the guest was handed, every host answer in order, and what the guest
// answered; every secret the call held (ctx.secrets, the environment's
// values, the credentials the index binds to variables) is replaced by
// its hash, or by a placeholder of its length where the guest saw it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/kindgi/packd/internal/redact"
	"github.com/kindgi/packd/internal/sandbox"
)

// Format is the version of the record file format (Record.Format).
const Format = 1

// Record is one recorded call, as its file holds it (JSON).
type Record struct {
	Format     int       `json:"packdRecord"`
	RecordedAt time.Time `json:"recordedAt"`
	PackID     string    `json:"packId"`
	// ArtifactVersion is the pack's, when the service knows it.
	ArtifactVersion string `json:"artifactVersion,omitempty"`
	Target          string `json:"target"` // "tool" or "check"
	ID              string `json:"id"`
	Version         string `json:"version,omitempty"`
	// Request is the protocol request message, each ctx.secrets value
	// replaced by its hash.
	Request json.RawMessage `json:"request"`
	Module  Module          `json:"module"`
	// Limits are the sandbox's settings that change what a guest computes,
	// and CallLimits the call's own (its fuel budget, its memory limit):
	// the file holds them as fields of the record ("fuel", "memoryLimit").
	Limits             sandbox.GuestLimits `json:"limits"`
	sandbox.CallLimits                     // the call's; Fuel never 0 (the sandbox's default then)
	// Instance is what the call ran in (sandbox.InstanceHit, …Miss,
	// …Fresh); Snapshot, for a pooled one, the snapshot it was reset to.
	Instance string    `json:"instance"`
	Snapshot *Snapshot `json:"snapshot,omitempty"` // written last by Encode
	// Env are the names of the environment the guest saw, in order; their
	// values are secrets ("env.NAME").
	Env []string `json:"env"`
	// Secrets are every secret of the call, by name ("ctx.secrets.NAME",
	// "env.NAME"): its hash and length, never its value.
	Secrets []Secret `json:"secrets,omitempty"`
	// GuestRequest is the message the guest read; Tape every host answer
	// it got, in order.
	GuestRequest Bytes                `json:"guestRequest"`
	Tape         []sandbox.TapeAnswer `json:"tape"`
	// Redactions are where a secret was in GuestRequest, Tape, Result's
	// output or error, and a placeholder of its length is now.
	Redactions []Redaction `json:"redactions,omitempty"`
	Result     Result      `json:"result"`

	// room is how many more redactions the record may hold (each counts
	// redactionCost against the per-call bound); overflow says one more
	// was needed: the record is not kept.
	room     int
	overflow bool
	// max is the per-call bound it was made under: Encode refuses to
	// write more than max+OverheadBytes.
	max int
}

// OverheadBytes is what a record file may hold besides the per-call
// bound (Bound's; host's RecordConfig.MaxCallBytes): its names, limits and the escaping
// of what the guest made. A record file is never larger than the two
// together (Encode says ErrTooLarge).
const OverheadBytes = 64 << 10

// ErrTooLarge: a record's file would be larger than its per-call
// bound and OverheadBytes (the call is counted RecordTooLarge).
var ErrTooLarge = errors.New("replay: the record is larger than its bound")

// redactionCost is what a redaction counts against a record's bound: a
// guest that repeats a secret it holds makes one for each repetition.
const redactionCost = 64

// Module is the module a call ran: its path in the module root, and
// the SHA-256 of its bytes ("sha256:…").
type Module struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Snapshot is a snapshot: its id (the SHA-256 of its memory and
// globals) and what the host answered the initialisation that made it.
type Snapshot struct {
	ID   string               `json:"id"`
	Tape []sandbox.TapeAnswer `json:"tape"`
	// enc, for a record the pack made, encodes Tape once for every record
	// of its snapshot.
	enc *SnapshotTape
}

// NewSnapshot is the snapshot of id whose tape is t: a record written
// with it writes the tape as t encoded it once for all the snapshot's
// records.
func NewSnapshot(id string, t *SnapshotTape) *Snapshot {
	return &Snapshot{ID: id, Tape: t.tape.Answers, enc: t}
}

// SnapshotTape is a snapshot's tape, encoded when first asked, with the
// environment's values pack code saw (secrets) starred out of the
// requests' details: an initialisation's request to a host named after
// one. Its answers hold none (an initialisation reaches no network), and
// a replay compares requests by their hash, not their detail.
type SnapshotTape struct {
	tape    *sandbox.Tape
	secrets *redact.Set
	once    sync.Once
	b       []byte
	err     error
}

// NewSnapshotTape is the encoding of t, starred the values in starred out
// of its requests' details (Secrets.Env).
func NewSnapshotTape(t *sandbox.Tape, starred *redact.Set) *SnapshotTape {
	return &SnapshotTape{tape: t, secrets: starred}
}

// Of says whether it is the encoding of t.
func (e *SnapshotTape) Of(t *sandbox.Tape) bool { return e.tape == t }

func (e *SnapshotTape) json() ([]byte, error) {
	e.once.Do(func() {
		answers := e.tape.Answers
		if answers == nil {
			answers = []sandbox.TapeAnswer{}
		}
		if !e.secrets.Empty() {
			answers = slices.Clone(answers)
			for i, a := range answers {
				if a.Detail != "" {
					b := []byte(a.Detail)
					e.secrets.Each(b, func(at int, _ string, f redact.Form) bool {
						copy(b[at:], bytes.Repeat([]byte{'*'}, len(f.Text)))
						return true
					})
					answers[i].Detail = string(b)
				}
			}
		}
		e.b, e.err = json.Marshal(answers)
	})
	return e.b, e.err
}

// Secret is one secret of a recorded call.
type Secret struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Length int    `json:"length"`
	// Bound: a credential the index binds, which packd sent and pack code
	// never had; a replay needs no value of it.
	Bound bool `json:"bound,omitempty"`
}

// Redaction is one place a secret was: In ("guestRequest", "output",
// "error", "request", "tape/N" or "tape/N/detail"), at Offset, Length
// bytes, written in one of redact.Forms: as the secret's value (Form
// "raw"), inside a JSON string ("json", "json-html") or percent-encoded
// ("url", "url-path").
type Redaction struct {
	In     string `json:"in"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
	Secret string `json:"secret"`
	Form   string `json:"form"`
}

// Result is what the guest answered: its status and output, or the
// error that ended it, and the fuel it burnt.
type Result struct {
	Status int    `json:"status"`
	Output Bytes  `json:"output"`
	Error  string `json:"error,omitempty"`
	Fuel   int64  `json:"fuel"`
}

// Bytes are bytes a record shows as text when they are UTF-8 (a guest's
// JSON), else as {"base64": …}.
type Bytes []byte

// MarshalJSON writes b as a string when it is valid UTF-8.
func (b Bytes) MarshalJSON() ([]byte, error) {
	if utf8.Valid(b) {
		return json.Marshal(string(b))
	}
	return json.Marshal(struct {
		Base64 []byte `json:"base64"`
	}{b})
}

// UnmarshalJSON reads either form.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*b = Bytes(s)
		return nil
	}
	var o struct {
		Base64 []byte `json:"base64"`
	}
	if err := json.Unmarshal(data, &o); err != nil {
		return errors.New(`bytes must be a string or {"base64": …}`)
	}
	*b = o.Base64
	return nil
}

// Encode is the record's file: one line of JSON. A record the pack made
// writes its snapshot's tape as encoded once for all the snapshot's
// records (encoding it again was most of a Go echo call's record), after
// the rest.
func (r *Record) Encode() ([]byte, error) {
	b, err := r.encode()
	if err == nil && r.max > 0 && len(b) > r.max+OverheadBytes {
		return nil, fmt.Errorf("%w: %d bytes, the bound %d and %d", ErrTooLarge, len(b), r.max, OverheadBytes)
	}
	return b, err
}

func (r *Record) encode() ([]byte, error) {
	if r.Snapshot == nil || r.Snapshot.enc == nil {
		b, err := json.Marshal(r)
		return append(b, '\n'), err
	}
	rest := *r
	rest.Snapshot = nil
	b, err := json.Marshal(&rest)
	if err != nil {
		return nil, err
	}
	tape, err := r.Snapshot.enc.json()
	if err != nil {
		return nil, err
	}
	id, _ := json.Marshal(r.Snapshot.ID)
	b = append(b[:len(b)-1], `,"snapshot":{"id":`...)
	b = append(append(append(b, id...), `,"tape":`...), tape...)
	return append(b, "}}\n"...), nil
}

// Read reads a record file's contents.
func Read(data []byte) (*Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("not a packd record: %w", err)
	}
	switch {
	case r.Format != Format:
		return nil, fmt.Errorf("not a packd record of format %d (packdRecord is %d)", Format, r.Format)
	case r.Module.SHA256 == "" || r.Module.Path == "":
		return nil, errors.New("the record names no module")
	case r.Instance != sandbox.InstanceFresh && r.Snapshot == nil:
		return nil, errors.New("the record of a pooled call has no snapshot")
	}
	// A replay makes a placeholder of each secret's length and writes
	// back at each redaction: none may be larger than the record itself.
	for _, s := range r.Secrets {
		if s.Length < 0 || s.Length > len(data) {
			return nil, fmt.Errorf("the record's secret %s is of %d bytes, in a record of %d", s.Name, s.Length, len(data))
		}
	}
	for _, red := range r.Redactions {
		if red.Offset < 0 || red.Length < 0 || red.Length > len(data) {
			return nil, fmt.Errorf("the record's redaction in %s at %d of %d bytes is not in the record", red.In, red.Offset, red.Length)
		}
	}
	return &r, nil
}
