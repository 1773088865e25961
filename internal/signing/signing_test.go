package signing

import (
	"crypto"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKindgisVectors: kindgi's published signed-export vectors check out
// where they should (Ed25519, and ECDSA P-256 with its r‖s signature), a
// tampered bundle does not, and an unknown algorithm is refused naming it.
func TestKindgisVectors(t *testing.T) {
	for _, name := range []string{"ed25519.json", "ecdsa-p256-sha256.json", "unknown-algorithm.json"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			var v struct {
				Algorithm                string
				PublicKeyPem             string
				Valid, Tampered, Refused json.RawMessage
			}
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			if v.Refused != nil {
				_, err := Verify(v.Refused, nil)
				if err == nil || !strings.Contains(err.Error(), `"`+v.Algorithm+`"`) {
					t.Fatalf("an unknown algorithm: %v", err)
				}
				return
			}
			key, err := ParsePublicKey([]byte(v.PublicKeyPem))
			if err != nil {
				t.Fatal(err)
			}
			signed, err := Verify(v.Valid, []crypto.PublicKey{key})
			if err != nil || !strings.HasPrefix(string(signed), `{"approvalId":`) {
				t.Fatalf("valid: %v %s", err, signed)
			}
			if _, err := Verify(v.Tampered, []crypto.PublicKey{key}); err == nil || !strings.Contains(err.Error(), "does not check out") {
				t.Fatalf("tampered: %v", err)
			}
		})
	}
}

// TestSignAndCheckAnIndex: a signature made with either algorithm checks
// out against its public key and the index it names; another index, an
// untrusted key, a changed or cut signature do not.
func TestSignAndCheckAnIndex(t *testing.T) {
	for _, alg := range []string{Ed25519, P256} {
		t.Run(alg, func(t *testing.T) {
			priv, pub, err := GenerateKey(alg)
			if err != nil {
				t.Fatal(err)
			}
			_, otherPub, _ := GenerateKey(alg)
			key, _ := ParsePublicKey(pub)
			other, _ := ParsePublicKey(otherPub)
			const hash = "sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
			env, err := Sign(priv, Body{PackID: "p", ArtifactVersion: "p-1", IndexHash: hash}, time.Unix(0, 0))
			if err != nil {
				t.Fatal(err)
			}
			if body, err := CheckIndex(env, []crypto.PublicKey{other, key}, hash); err != nil || body.PackID != "p" {
				t.Fatalf("the signed index: %v %+v", err, body)
			}
			var e Envelope
			_ = json.Unmarshal(env, &e)
			if e.Algorithm != alg || e.Kind != KindPack {
				t.Fatalf("envelope %+v", e)
			}
			sig, _ := base64.StdEncoding.DecodeString(e.Signature)
			cut := e
			cut.Signature = base64.StdEncoding.EncodeToString(sig[:len(sig)-1])
			flipped := e
			sig[0] ^= 1
			flipped.Signature = base64.StdEncoding.EncodeToString(sig)
			enc := func(e Envelope) []byte { b, _ := json.Marshal(e); return b }
			for _, c := range []struct {
				name    string
				env     []byte
				trusted []crypto.PublicKey
				hash    string
				want    string
			}{
				{"another index", env, []crypto.PublicKey{key}, "sha256:" + strings.Repeat("0", 64), "the signature is over another index"},
				{"an untrusted key", env, []crypto.PublicKey{other}, hash, "by a key packd does not trust"},
				{"no trusted key", env, nil, hash, "by a key packd does not trust"},
				{"a cut signature", enc(cut), []crypto.PublicKey{key}, hash, "does not check out"},
				{"a changed signature", enc(flipped), []crypto.PublicKey{key}, hash, "does not check out"},
				{"a cut file", env[:len(env)/2], []crypto.PublicKey{key}, hash, "not a signed envelope"},
			} {
				if _, err := CheckIndex(c.env, c.trusted, c.hash); err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: %v, want %q", c.name, err, c.want)
				}
			}
		})
	}
	if _, _, err := GenerateKey("rsa"); err == nil {
		t.Error("an unknown algorithm made a key")
	}
}
