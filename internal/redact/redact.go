// Package redact is the one place packd knows how a secret may be
// written in bytes it hands on: an answer the guest reads back, an error
// text, a call record, a replay's report. A secret is looked for as it
// is and in the forms a server, an encoder or a URL gives it (Forms), and
// every form is replaced (Replace) or found (Each) from here, so that a
// place that scrubs never misses a form another place knows.
package redact

import (
	"bytes"
	"encoding/json"
	"net/url"

	"github.com/kindgi/packd/internal/ojson"
)

// The forms of a secret (Form.Kind).
const (
	Raw      = "raw"       // as it is
	JSON     = "json"      // inside a JSON string, as JavaScript's JSON.stringify writes it
	JSONHTML = "json-html" // inside a JSON string, as Go's encoding/json writes it (<, >, & escaped)
	URL      = "url"       // percent-encoded as a query value (url.QueryEscape)
	URLPath  = "url-path"  // percent-encoded as a path segment (url.PathEscape)
)

// Form is one way a secret may be written.
type Form struct {
	Kind string
	Text []byte
}

// Forms are how v may be written: as it is, then each other form that
// differs from every form before it.
func Forms(v string) []Form {
	forms := []Form{{Raw, []byte(v)}}
	add := func(kind string, text []byte) {
		for _, f := range forms {
			if bytes.Equal(f.Text, text) {
				return
			}
		}
		forms = append(forms, Form{kind, text})
	}
	j := ojson.Encode(v)
	add(JSON, j[1:len(j)-1])
	if h, err := json.Marshal(v); err == nil {
		add(JSONHTML, h[1:len(h)-1])
	}
	add(URL, []byte(url.QueryEscape(v)))
	add(URLPath, []byte(url.PathEscape(v)))
	return forms
}

// Set is the forms of some secrets, each by its name. The zero value is
// empty and finds nothing.
type Set struct {
	secrets []named
}

type named struct {
	name  string
	forms []Form
}

// Add adds a secret's forms under name, unless it is shorter than min
// bytes (a short secret would match what is not it) or already there.
func (s *Set) Add(name, value string, min int) {
	if len(value) < max(min, 1) {
		return
	}
	for _, n := range s.secrets {
		if n.name == name && string(n.forms[0].Text) == value {
			return
		}
	}
	s.secrets = append(s.secrets, named{name, Forms(value)})
}

// Empty says whether the set finds nothing.
func (s *Set) Empty() bool { return s == nil || len(s.secrets) == 0 }

// Each calls fn at every place in b a secret's form starts (secrets in
// the order added, each form in Forms' order), b as it is then: fn may
// overwrite the form's bytes in place (a form it overwrote is not found
// again), and returns false to stop.
func (s *Set) Each(b []byte, fn func(at int, name string, f Form) bool) {
	if s.Empty() {
		return
	}
	for _, n := range s.secrets {
		for _, f := range n.forms {
			for at := 0; ; {
				i := bytes.Index(b[at:], f.Text)
				if i < 0 {
					break
				}
				at += i
				if !fn(at, n.name, f) {
					return
				}
				at += len(f.Text)
			}
		}
	}
}

// Replace is b with every form of every secret replaced by with (b itself
// when it holds none).
func (s *Set) Replace(b []byte, with string) []byte {
	if s.Empty() {
		return b
	}
	for _, n := range s.secrets {
		for _, f := range n.forms {
			if bytes.Contains(b, f.Text) {
				b = bytes.ReplaceAll(b, f.Text, []byte(with))
			}
		}
	}
	return b
}

// String is Replace of a string.
func (s *Set) String(v, with string) string {
	if s.Empty() {
		return v
	}
	return string(s.Replace([]byte(v), with))
}
