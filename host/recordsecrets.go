package host

// The secrets of a recorded call: which they are, their hashes, and where
// they were redacted (each form redact.Forms knows, starred at its length).

import (
	"strings"

	"github.com/kindgi/packd/internal/ojson"
	"github.com/kindgi/packd/internal/redact"
)

// envSecrets are the secrets of a call that are the pack's, not the
// call's: the environment's values (a snapshot's initialisation saw them).
func envSecrets(secrets *callSecrets) *redact.Set {
	var set redact.Set
	for _, s := range secrets.list {
		if strings.HasPrefix(s.name, "env.") {
			set.Add(s.name, s.value, minRedacted)
		}
	}
	return &set
}

// secret is one secret value of a call, by its record name, with its
// hash.
type secret struct {
	name, value, hash string
}

// callSecrets are a call's secrets, and the forms of those long enough
// to be looked for (redact.Set: the one search for them).
type callSecrets struct {
	list  []secret
	forms redact.Set
}

// secretsOf are a call's secrets: its ctx.secrets (the strings among
// them), the values of the environment pack code sees, and of the
// variables the index binds as credentials.
func (p *Pack) secretsOf(callCtx *ojson.Object) *callSecrets {
	var out []secret
	if callCtx != nil {
		if s, ok := objectField(callCtx, "secrets"); ok {
			for i, k := range s.Keys {
				if v, ok := s.Vals[i].(string); ok && v != "" {
					out = append(out, secret{name: "ctx.secrets." + k, value: v})
				}
			}
		}
	}
	for _, kv := range p.env {
		if name, v, _ := strings.Cut(kv, "="); v != "" {
			out = append(out, secret{name: "env." + name, value: v})
		}
	}
	for _, name := range p.credentialVars {
		if v, ok := p.lookup(name); ok && v != "" {
			out = append(out, secret{name: "env." + name, value: v})
		}
	}
	cs := &callSecrets{list: out}
	for i := range out {
		out[i].hash = ContentHash([]byte(out[i].value))
		cs.forms.Add(out[i].name, out[i].value, minRedacted)
	}
	return cs
}

// secretHash is the hash of the secret of that name, as callSecrets made
// it (an empty one it leaves out is hashed here).
func secretHash(secrets *callSecrets, name, value string) string {
	for _, s := range secrets.list {
		if s.name == name {
			return s.hash
		}
	}
	return ContentHash([]byte(value))
}

// minRedacted: a secret shorter than this is hashed, but not looked for
// in the bytes a record holds (it would match what is not it).
const minRedacted = 4

// redact replaces every occurrence in b of a secret, in every form
// redact.Forms knows (its value, inside a JSON string, percent-encoded),
// with asterisks of its length, and
// notes where, while the record has room.
func (r *Record) redact(in string, b []byte, secrets *callSecrets) []byte {
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

// recordMessage is the request message of a recorded call, its
// ctx.secrets values replaced by their hashes and every other place a
// secret is redacted.
func (r *Record) recordMessage(msg *ojson.Object, secrets *callSecrets) {
	out := msg
	if ctx, ok := objectField(msg, "ctx"); ok {
		if s, ok := objectField(ctx, "secrets"); ok {
			hashed := &ojson.Object{}
			for i, k := range s.Keys {
				v := s.Vals[i]
				if str, ok := v.(string); ok {
					v = secretHash(secrets, "ctx.secrets."+k, str)
				}
				hashed.Set(k, v)
			}
			c := &ojson.Object{Keys: ctx.Keys, Vals: append([]any(nil), ctx.Vals...)}
			c.Set("secrets", hashed)
			out = &ojson.Object{Keys: msg.Keys, Vals: append([]any(nil), msg.Vals...)}
			out.Set("ctx", c)
		}
	}
	r.Request = r.redact("request", ojson.Encode(out), secrets)
}
