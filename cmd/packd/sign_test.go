package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSignedPacks: a pack signed by packd sign (its index naming its
// modules' digests) loads under --trust; unsigned, signed by an untrusted
// key, with its index or a module changed, of an unknown algorithm or with
// its signature cut, it is refused by packd check and by the boot, and a
// reload onto it fails while the pack served goes on; without --trust the
// listening record says signatures are not checked.
func TestSignedPacks(t *testing.T) {
	dir := t.TempDir()
	wasm, err := os.ReadFile(filepath.Join(helloDir, "hello.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	module, index := filepath.Join(dir, "hello.wasm"), filepath.Join(dir, "index.json")
	write := func(path string, b []byte) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(module, wasm)
	for _, args := range [][]string{
		{"index", "--index", index, "--pack-id", "hello", "--published-at", "2026-12-06T00:00:00.000Z", "--digests", module},
		{"keygen", "--out", filepath.Join(dir, "ops")},
		{"keygen", "--out", filepath.Join(dir, "stranger"), "--algorithm", "ecdsa-p256-sha256"},
		{"sign", "--key", filepath.Join(dir, "ops.key"), "--index", index},
	} {
		if r := packd(t, args...); r.code != 0 {
			t.Fatalf("packd %s: %d %s %s", args[0], r.code, r.stdout, r.stderr)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "ops.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the private key's mode: %v %v", fi.Mode(), err)
	}
	trust := filepath.Join(dir, "ops.pub")
	if r := packd(t, "check", "--index", index, "--trust", trust); r.code != 0 {
		t.Fatalf("packd check of the signed pack: %d %s %s", r.code, r.stdout, r.stderr)
	}
	good := map[string][]byte{}
	for _, f := range []string{index, index + ".sig", module} {
		good[f], _ = os.ReadFile(f)
	}
	restore := func() {
		for f, b := range good {
			write(f, b)
		}
	}
	cases := []struct {
		name  string
		spoil func()
		args  []string
		want  string
	}{
		{"unsigned", func() { os.Remove(index + ".sig") }, nil, "The pack is not signed"},
		{"signed by an untrusted key", func() {
			if r := packd(t, "sign", "--key", filepath.Join(dir, "stranger.key"), "--index", index); r.code != 0 {
				t.Fatal(r.stderr)
			}
		}, nil, "by a key packd does not trust"},
		{"another index", func() {
			write(index, bytes.Replace(good[index], []byte("2026-12-06T00:00:00.000Z"), []byte("2026-12-07T00:00:00.000Z"), 1))
		}, nil, "the signature is over another index"},
		{"another module", func() { write(module, append(append([]byte(nil), wasm...), 0, 3, 1, 'x', 0)) }, nil, "hello.wasm is not the module the index names"},
		{"an unknown algorithm", func() {
			write(index+".sig", bytes.Replace(good[index+".sig"], []byte(`"algorithm": "ed25519"`), []byte(`"algorithm": "ecdsa-p384-sha384"`), 1))
		}, nil, `algorithm "ecdsa-p384-sha384" is not one packd verifies`},
		{"a cut signature", func() { write(index+".sig", good[index+".sig"][:len(good[index+".sig"])/2]) }, nil, "not a signed envelope"},
		{"a signature elsewhere", func() {}, []string{"--signature", filepath.Join(dir, "nowhere.sig")}, "The pack is not signed"},
	}
	for _, c := range cases {
		c.spoil()
		r := packd(t, append([]string{"check", "--index", index, "--trust", trust}, c.args...)...)
		if r.code == 0 || !strings.Contains(r.stdout+r.stderr, c.want) {
			t.Errorf("packd check, %s: %d %s %s; want %q", c.name, r.code, r.stdout, r.stderr, c.want)
		}
		restore()
	}

	s := start(t, index, nil, "--trust", trust)
	if !strings.Contains(strings.Join(s.stderr.snapshot(), "\n"), `"signatures":"required (1 trusted key(s))"`) {
		t.Errorf("the listening record does not say signatures are required")
	}
	greet := func() {
		t.Helper()
		r := s.invoke(t, invokeBody("hello.greet", "", `{"name":"Ada"}`, conformanceCtx))
		if r.status != 200 || !strings.Contains(r.body, `"kind":"result"`) {
			t.Fatalf("hello.greet: %d %s", r.status, r.body)
		}
	}
	greet()
	for _, c := range cases[:6] {
		c.spoil()
		if rec := s.hup(t, "reloaded", "reload-failed"); rec["kind"] != "reload-failed" || !strings.Contains(fmt.Sprint(rec["problems"]), c.want) {
			t.Errorf("a reload, %s: %v; want %q", c.name, rec, c.want)
		}
		greet()
		restore()
	}
	if rec := s.hup(t, "reloaded", "reload-failed"); rec["kind"] != "reloaded" {
		t.Errorf("a reload of the signed pack again: %v", rec)
	}

	// At boot: an unsigned pack never listens.
	os.Remove(index + ".sig")
	b := launch(t, index, nil, "--trust", trust)
	if line := b.stderr.waitFor(t, 60*time.Second, kindIs("boot-failed")); !strings.Contains(line, "The pack is not signed") {
		t.Fatalf("boot of an unsigned pack: %s", line)
	}
	restore()
	plain := start(t, index, nil)
	if !strings.Contains(strings.Join(plain.stderr.snapshot(), "\n"), `"signatures":"not checked (no --trust)"`) {
		t.Errorf("without --trust, the listening record does not say signatures are not checked")
	}
}
