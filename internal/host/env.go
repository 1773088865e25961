package host

// What pack code sees of the process environment, and which of the
// names the index requires are missing.

import (
	"slices"
	"sort"
	"strings"
)

// declaredEnv is what guests see of the environment: the index's declared
// names that are set, nothing else.
func declaredEnv(idx *Index, lookup func(string) (string, bool)) []string {
	var env []string
	seen := map[string]bool{}
	for _, name := range append(slices.Clone(idx.EnvRequired), idx.EnvOptional...) {
		if seen[name] {
			continue
		}
		seen[name] = true
		if v, ok := lookup(name); ok {
			env = append(env, name+"="+v)
		}
	}
	sort.Strings(env)
	return env
}

// withoutNames is env (KEY=VALUE) without the names listed.
func withoutNames(env, names []string) []string {
	if len(names) == 0 {
		return env
	}
	return slices.DeleteFunc(env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, name)
	})
}

// GuestEnvNames are the environment names pack code sees, sorted.
func (p *Pack) GuestEnvNames() []string {
	names := make([]string, 0, len(p.env))
	for _, kv := range p.env {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	return names
}

// MissingEnv lists the index's required env names that are unset or empty,
// in index order.
func (p *Pack) MissingEnv(lookup func(string) (string, bool)) []string {
	missing := []string{}
	for _, name := range p.index.EnvRequired {
		if v, ok := lookup(name); !ok || v == "" {
			missing = append(missing, name)
		}
	}
	return missing
}
