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

// v1 is every tool's version; what each option says is the tool's entry in
// index.json, which packd index writes from this module.
var v1 = guest.Version("1.0.0")

func init() {
	guest.OptionalEnv("CONFORMANCE_VISIBLE")
	guest.Tool("conformance.echo", func(in json.RawMessage, _ *guest.Context) (any, error) {
		v, err := decode[struct {
			Message string `json:"message"`
		}](in)
		return ordered{{"message", v.Message}}, err
	}, v1, guest.Description("Answers with its message."), guest.InputSchema(`{"type":"object","properties":{"message":{"type":"string","minLength":1}},"required":["message"],"additionalProperties":false}`), guest.OutputSchema(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`))
	guest.Tool("conformance.bad-output", func(json.RawMessage, *guest.Context) (any, error) {
		return ordered{{"message", 42}}, nil
	}, v1, guest.InputSchema(`{"type":"object"}`), guest.OutputSchema(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`))
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
	}, v1, guest.InputSchema(`{"type":"object"}`), guest.OutputSchema(`{"type":"object"}`))
	guest.Tool("conformance.defaults", func(in json.RawMessage, _ *guest.Context) (any, error) {
		return in, nil
	}, v1, guest.InputSchema(`{"type":"object","properties":{"name":{"type":"string"},"greeting":{"type":"string","default":"Hello"},"options":{"type":"object","properties":{"loud":{"type":"boolean","default":false}},"default":{}}},"required":["name"]}`), guest.OutputSchema(`{"type":"object"}`))
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
	}, v1, guest.InputSchema(`{"type":"object","properties":{"release":{"type":"string","minLength":1},"ms":{"type":"integer","minimum":0}},"required":["release","ms"]}`), guest.OutputSchema(`{"type":"object","properties":{"released":{"type":"boolean"}},"required":["released"]}`))
	guest.Tool("conformance.noisy", func(json.RawMessage, *guest.Context) (any, error) {
		fmt.Println("noisy: a line on stdout")
		fmt.Println(`{"v":2,"kind":"result","output":{"ok":false}}`)
		fmt.Fprintln(os.Stderr, "noisy: a line on stderr")
		return ordered{{"ok", true}}, nil
	}, v1, guest.InputSchema(`{"type":"object"}`), guest.OutputSchema(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`))
	guest.Tool("conformance.process-env", func(json.RawMessage, *guest.Context) (any, error) {
		names := []string{}
		for _, kv := range os.Environ() {
			name, _, _ := strings.Cut(kv, "=")
			names = append(names, name)
		}
		sort.Strings(names)
		return ordered{{"names", names}}, nil
	}, v1, guest.InputSchema(`{"type":"object"}`), guest.OutputSchema(`{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"}}},"required":["names"]}`))
	guest.Tool("conformance.sleep", func(in json.RawMessage, _ *guest.Context) (any, error) {
		v, err := decode[struct {
			Ms int64 `json:"ms"`
		}](in)
		if err != nil {
			return nil, err
		}
		time.Sleep(time.Duration(v.Ms) * time.Millisecond)
		return ordered{{"slept", v.Ms}}, nil
	}, v1, guest.InputSchema(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0}},"required":["ms"]}`), guest.OutputSchema(`{"type":"object","properties":{"slept":{"type":"integer"}},"required":["slept"]}`))
	guest.Tool("conformance.throws", func(json.RawMessage, *guest.Context) (any, error) {
		return nil, errors.New("boom")
	}, v1, guest.InputSchema(`{"type":"object"}`), guest.OutputSchema(`{"type":"object"}`))

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
	}, guest.Guardrail("conformance.min-length"), guest.Action(`{"on-violation":"halt"}`), guest.Severity("error"), guest.ConfigSchema(`{"type":"object","properties":{"minLength":{"type":"integer","minimum":0,"default":1}}}`))
	guest.Check("conformance.checks.throws", func(json.RawMessage, json.RawMessage) (any, error) {
		return nil, errors.New("check boom")
	}, guest.Guardrail("conformance.check-throws"), guest.Action(`{"on-violation":"log-only"}`))
}

func main() {}
