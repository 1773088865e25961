// Command conformance is the conformance fixture pack of the existing pack
// services (PROTOCOL-NOTES §8), adapted to WebAssembly: `hold` sleeps instead
// of polling for a file, since a guest has no filesystem.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/kindgi/packd/abi/guest"
)

func decode[T any](raw json.RawMessage) (T, error) {
	var v T
	err := json.Unmarshal(raw, &v)
	return v, err
}

// ordered is a JSON object that keeps the order its fields were added in.
type ordered []field

type field struct {
	key string
	val any
}

func (o ordered) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(f.key)
		v, err := json.Marshal(f.val)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

func init() {
	guest.Tool("conformance.echo", func(in json.RawMessage, _ *guest.Context) (any, error) {
		v, err := decode[struct {
			Message string `json:"message"`
		}](in)
		return ordered{{"message", v.Message}}, err
	})
	guest.Tool("conformance.bad-output", func(json.RawMessage, *guest.Context) (any, error) {
		return ordered{{"message", 42}}, nil
	})
	guest.Tool("conformance.context", func(_ json.RawMessage, ctx *guest.Context) (any, error) {
		raw, err := decode[map[string]json.RawMessage](ctx.Raw)
		if err != nil {
			return nil, err
		}
		out := ordered{{"tenantId", ctx.TenantID}, {"runId", ctx.RunID}}
		for _, k := range []string{"env", "secrets", "config"} {
			if v, ok := raw[k]; ok {
				out = append(out, field{k, v})
			} else {
				out = append(out, field{k, ordered{}})
			}
		}
		for _, k := range []string{"requestId", "idempotencyKey", "projectId", "orgId", "settings"} {
			if v, ok := raw[k]; ok {
				out = append(out, field{k, v})
			}
		}
		return out, nil
	})
	guest.Tool("conformance.defaults", func(in json.RawMessage, _ *guest.Context) (any, error) {
		return in, nil
	})
	guest.Tool("conformance.hold", func(in json.RawMessage, _ *guest.Context) (any, error) {
		v, err := decode[struct {
			Release string `json:"release"`
			Ms      int64  `json:"ms"`
		}](in)
		if err != nil {
			return nil, err
		}
		fmt.Printf("hold: %s\n", v.Release)
		time.Sleep(time.Duration(v.Ms) * time.Millisecond)
		return ordered{{"released", true}}, nil
	})
	guest.Tool("conformance.noisy", func(json.RawMessage, *guest.Context) (any, error) {
		fmt.Println("noisy: a line on stdout")
		fmt.Println(`{"v":2,"kind":"result","output":{"ok":false}}`)
		fmt.Fprintln(os.Stderr, "noisy: a line on stderr")
		return ordered{{"ok", true}}, nil
	})
	guest.Tool("conformance.process-env", func(json.RawMessage, *guest.Context) (any, error) {
		names := []string{}
		for _, kv := range os.Environ() {
			name, _, _ := strings.Cut(kv, "=")
			names = append(names, name)
		}
		sort.Strings(names)
		return ordered{{"names", names}}, nil
	})
	guest.Tool("conformance.sleep", func(in json.RawMessage, _ *guest.Context) (any, error) {
		v, err := decode[struct {
			Ms int64 `json:"ms"`
		}](in)
		if err != nil {
			return nil, err
		}
		time.Sleep(time.Duration(v.Ms) * time.Millisecond)
		return ordered{{"slept", v.Ms}}, nil
	})
	guest.Tool("conformance.throws", func(json.RawMessage, *guest.Context) (any, error) {
		return nil, errors.New("boom")
	})

	guest.Check("conformance.checks.min-length", func(config, trace json.RawMessage) (any, error) {
		cfg, err := decode[struct {
			MinLength *int `json:"minLength"`
		}](config)
		if err != nil {
			return nil, err
		}
		min := 1
		if cfg.MinLength != nil {
			min = *cfg.MinLength
		}
		tr, _ := decode[struct {
			Output any `json:"output"`
		}](trace)
		s, _ := tr.Output.(string)
		// JavaScript counts string length in UTF-16 code units.
		if len(utf16.Encode([]rune(strings.TrimSpace(s)))) >= min {
			return ordered{{"passed", true}}, nil
		}
		return ordered{{"passed", false}, {"reason", "too short"}}, nil
	})
	guest.Check("conformance.checks.throws", func(json.RawMessage, json.RawMessage) (any, error) {
		return nil, errors.New("check boom")
	})
}

func main() {}
