package main

import (
	"crypto"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/signing"
)

// keygenCmd writes a signing key pair: NAME.key (the private half, 0600)
// and NAME.pub (the public half, for --trust).
func keygenCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("packd keygen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "write NAME.key (private, mode 0600) and NAME.pub (public)")
	alg := fs.String("algorithm", signing.Ed25519, "ed25519, or ecdsa-p256-sha256 (for a KMS without Ed25519)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: packd keygen --out NAME [--algorithm ed25519|ecdsa-p256-sha256]")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *out == "" || fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	priv, pub, err := signing.GenerateKey(*alg)
	if err != nil {
		fmt.Fprintln(stderr, "packd keygen:", err)
		return exitUsage
	}
	// The private half is never overwritten, and never readable by others.
	f, err := os.OpenFile(*out+".key", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		_, err = f.Write(priv)
		err = errors.Join(err, f.Close())
	}
	if err == nil {
		err = writeFileAtomic(*out+".pub", pub)
	}
	if err != nil {
		fmt.Fprintln(stderr, "packd keygen:", err)
		return exitError
	}
	fmt.Fprintf(stdout, "wrote %s.key and %s.pub (%s)\n", *out, *out, *alg)
	return exitOK
}

// signCmd signs a pack's index: a signature (packd's signing envelope)
// of a body naming the index by its hash, beside it.
func signCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("packd sign", flag.ContinueOnError)
	fs.SetOutput(stderr)
	key := fs.String("key", "", "the private key (packd keygen's NAME.key)")
	index := fs.String("index", "index.json", "the index to sign (it must name its modules' digests: packd index --digests)")
	out := fs.String("out", "", "where to write the signature (default: the index's path and .sig)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: packd sign --key NAME.key --index index.json [--out index.json.sig]")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *key == "" || fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "packd sign: "+format+"\n", a...)
		return exitError
	}
	if err := onDisk("sign", *index); err != nil {
		fmt.Fprintln(stderr, "packd sign:", err)
		return exitUsage
	}
	data, err := os.ReadFile(*index)
	if err != nil {
		return fail("%v", err)
	}
	idx, problems := host.ValidateIndex(data)
	if len(problems) > 0 {
		return fail("%s: %s", *index, strings.Join(problems, "; "))
	}
	if idx.ModuleDigests == nil {
		return fail("%s names no moduleDigests: a signature over it would not cover the modules (packd index --digests first)", *index)
	}
	priv, err := os.ReadFile(*key)
	if err != nil {
		return fail("%v", err)
	}
	env, err := signing.Sign(priv, signing.Body{PackID: idx.PackID, ArtifactVersion: idx.ArtifactVersion, IndexHash: idx.Hash, SignedAt: time.Now().UTC().Format("2006-01-02T15:04:05.000Z")}, time.Now())
	if err != nil {
		return fail("%s: %v", *key, err)
	}
	if *out == "" {
		*out = *index + ".sig"
	}
	if err := writeFileAtomic(*out, env); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(stdout, "wrote %s: %s signed (%s)\n", *out, idx.ArtifactVersion, idx.Hash)
	return exitOK
}

// readTrust reads the public keys --trust names.
func readTrust(paths []string) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("--trust %s: %v", p, err)
		}
		k, err := signing.ParsePublicKey(b)
		if err != nil {
			return nil, fmt.Errorf("--trust %s: %v", p, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}
