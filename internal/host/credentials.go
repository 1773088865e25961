package host

import (
	"slices"

	"github.com/kindgi/packd/internal/host/internal/egress"
	"github.com/kindgi/packd/internal/ojson"
)

// Credentials the index binds (network.credentials): the host keeps
// their values from the guest and hands them to egress, which writes them
// into the requests to their hosts (host/internal/egress/credentials.go).

// boundSecrets names the ctx.secrets the index binds as credentials, for
// any tool or check; credentialEnv the process variables.
func (idx *Index) boundSecrets() []string {
	return idx.credentialNames(func(c egress.Credential) string { return c.Secret })
}

func (idx *Index) credentialEnv() []string {
	return idx.credentialNames(func(c egress.Credential) string { return c.Env })
}

// credentialNames lists, once each, the non-empty names that source
// gives of the index's credentials.
func (idx *Index) credentialNames(source func(egress.Credential) string) []string {
	var names []string
	for _, t := range idx.targets() {
		for _, c := range t.limits.Network.Credentials {
			if n := source(c); n != "" && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// withoutBoundSecrets is a call's ctx as the guest gets it: without the
// ctx.secrets the index binds as credentials (bound), whichever tool is
// called: a secret the pack declared a credential is never pack code's to
// hold. ctx itself is left as it is (its values are the credentials');
// nil stays nil.
func withoutBoundSecrets(ctx *ojson.Object, bound []string) *ojson.Object {
	if ctx == nil || len(bound) == 0 {
		return ctx
	}
	secrets, ok := objectField(ctx, "secrets")
	if !ok {
		return ctx
	}
	kept := &ojson.Object{}
	for i, k := range secrets.Keys {
		if !slices.Contains(bound, k) {
			kept.Set(k, secrets.Vals[i])
		}
	}
	out := &ojson.Object{Keys: slices.Clone(ctx.Keys), Vals: slices.Clone(ctx.Vals)}
	out.Set("secrets", kept)
	return out
}

// credential gives egress the value of a credential for a call: a string
// of the call's ctx.secrets, or the process variable.
func (p *Pack) credential(callCtx *ojson.Object) func(egress.Credential) (string, bool) {
	return func(c egress.Credential) (string, bool) {
		if c.Env != "" {
			return p.lookup(c.Env)
		}
		if callCtx == nil {
			return "", false
		}
		secrets, ok := objectField(callCtx, "secrets")
		if !ok {
			return "", false
		}
		v, ok := stringField(secrets, c.Secret)
		return v, ok
	}
}
