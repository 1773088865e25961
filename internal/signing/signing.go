// Package signing signs a pack's index and checks such a signature: the
// envelope of kindgi's signed exports (its specs' signed-export.schema.json:
// the signed bytes as base64 in bundle, the algorithm, the signature over
// those bytes, the signer's public key), with Ed25519 or ECDSA P-256 over
// SHA-256 (IEEE P1363 r‖s, as Web Crypto gives it). A pack's signature
// signs a small body naming the index by its hash (Body); the index names
// each module's digest (moduleDigests), so the signature covers the code.
// A verifier checks the signature over the bundle's bytes as they are and
// re-serializes nothing; it refuses an algorithm it does not know, naming
// it, and never falls back to another.
package signing

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// The algorithms, as the envelope names them.
const (
	Ed25519 = "ed25519"
	P256    = "ecdsa-p256-sha256"
)

// Envelope is a signature: kindgi's signed-export envelope (its other
// fields, an export's ids, are read and ignored).
type Envelope struct {
	Kind                string `json:"kind,omitempty"`
	Bundle              string `json:"bundle"` // base64 of the signed bytes
	BundleSchemaVersion string `json:"bundleSchemaVersion"`
	Algorithm           string `json:"algorithm"`
	SigningKeyID        string `json:"signingKeyId"`
	Signature           string `json:"signature"` // base64
	PublicKey           string `json:"publicKey"` // PEM SPKI
	Canonicalization    string `json:"canonicalization"`
	ExportedAt          string `json:"exportedAt"`
}

// Body is what a pack's signature signs, as sorted-key JSON (its fields
// in the order of their names).
type Body struct {
	ArtifactVersion string `json:"artifactVersion"`
	IndexHash       string `json:"indexHash"` // "sha256:" and the hex SHA-256 of the index file
	PackID          string `json:"packId"`
	SignedAt        string `json:"signedAt"`
}

// KindPack is a pack signature's kind; BodyVersion its body's version.
const (
	KindPack    = "pack-index"
	BodyVersion = "1.0.0"
)

// MaxEnvelope is the most a signature file may hold.
const MaxEnvelope = 64 << 10

// GenerateKey makes a key pair of the algorithm: its private half PEM
// PKCS #8, its public half PEM SPKI.
func GenerateKey(algorithm string) (private, public []byte, err error) {
	var priv crypto.Signer
	switch algorithm {
	case Ed25519:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	case P256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		return nil, nil, fmt.Errorf("no algorithm %q: %s or %s", algorithm, Ed25519, P256)
	}
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), nil
}

// Sign signs body with the private key (PEM PKCS #8) and answers the
// envelope's JSON.
func Sign(private []byte, body Body, now time.Time) ([]byte, error) {
	block, _ := pem.Decode(private)
	if block == nil {
		return nil, errors.New("the key is not PEM")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the key: %w", err)
	}
	signed, err := json.Marshal(body) // its fields in name order: sorted-key JSON
	if err != nil {
		return nil, err
	}
	var sig []byte
	var algorithm string
	switch k := key.(type) {
	case ed25519.PrivateKey:
		algorithm, sig = Ed25519, ed25519.Sign(k, signed)
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, errors.New("the key is ECDSA on another curve than P-256")
		}
		sum := sha256.Sum256(signed)
		r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
		if err != nil {
			return nil, err
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
		algorithm = P256
	default:
		return nil, fmt.Errorf("the key is %T: packd signs with %s or %s", key, Ed25519, P256)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.(crypto.Signer).Public())
	if err != nil {
		return nil, err
	}
	env := Envelope{Kind: KindPack, Bundle: base64.StdEncoding.EncodeToString(signed), BundleSchemaVersion: BodyVersion,
		Algorithm: algorithm, SigningKeyID: KeyID(pub), Signature: base64.StdEncoding.EncodeToString(sig),
		PublicKey: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})), Canonicalization: "sorted-key-json",
		ExportedAt: now.UTC().Format("2006-01-02T15:04:05.000Z")}
	out, err := json.MarshalIndent(env, "", "  ")
	return append(out, '\n'), err
}

// KeyID names a public key (its DER SPKI): "sha256:" and the first 16
// bytes of its SHA-256, in hex.
func KeyID(spki []byte) string {
	sum := sha256.Sum256(spki)
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// ParsePublicKey reads a public key, PEM SPKI: Ed25519 or ECDSA P-256.
func ParsePublicKey(p []byte) (crypto.PublicKey, error) {
	block, _ := pem.Decode(p)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("not a PEM public key (-----BEGIN PUBLIC KEY-----)")
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	switch k := key.(type) {
	case ed25519.PublicKey:
		return k, nil
	case *ecdsa.PublicKey:
		if k.Curve == elliptic.P256() {
			return k, nil
		}
	}
	return nil, fmt.Errorf("a %T key: packd verifies %s and %s", key, Ed25519, P256)
}

// Verify checks an envelope's signature with the trusted keys and answers
// the signed bytes. It refuses an envelope that does not parse, an
// algorithm it does not know (naming it), a key that is not one of
// trusted, and a signature that is not the key's over the bundle.
func Verify(envelope []byte, trusted []crypto.PublicKey) ([]byte, error) {
	if len(envelope) > MaxEnvelope {
		return nil, fmt.Errorf("the signature is over %d bytes", MaxEnvelope)
	}
	var env Envelope
	if err := json.Unmarshal(envelope, &env); err != nil {
		return nil, fmt.Errorf("the signature is not a signed envelope: %v", err)
	}
	if env.Algorithm != Ed25519 && env.Algorithm != P256 {
		return nil, fmt.Errorf("the signature's algorithm %.40q is not one packd verifies (%s, %s)", env.Algorithm, Ed25519, P256)
	}
	if env.Canonicalization != "sorted-key-json" {
		return nil, fmt.Errorf("the signature's canonicalization %q is not sorted-key-json", env.Canonicalization)
	}
	signed, err1 := base64.StdEncoding.DecodeString(env.Bundle)
	sig, err2 := base64.StdEncoding.DecodeString(env.Signature)
	if err1 != nil || err2 != nil || len(signed) == 0 {
		return nil, errors.New("the signature's bundle or signature is not base64")
	}
	pub, err := ParsePublicKey([]byte(env.PublicKey))
	if err != nil {
		return nil, fmt.Errorf("the signature's public key: %v", err)
	}
	if !trustedKey(pub, trusted) {
		return nil, fmt.Errorf("the signature is by a key packd does not trust (signingKeyId %.80q): give its public key to --trust", env.SigningKeyID)
	}
	ok := false
	switch k := pub.(type) {
	case ed25519.PublicKey:
		ok = env.Algorithm == Ed25519 && len(sig) == ed25519.SignatureSize && ed25519.Verify(k, signed, sig)
	case *ecdsa.PublicKey:
		if env.Algorithm == P256 && len(sig) == 64 {
			sum := sha256.Sum256(signed)
			ok = ecdsa.Verify(k, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
		}
	}
	if !ok {
		return nil, errors.New("the signature does not check out: the signed bytes or the signature were changed, or another key signed them")
	}
	return signed, nil
}

func trustedKey(pub crypto.PublicKey, trusted []crypto.PublicKey) bool {
	for _, t := range trusted {
		switch k := t.(type) {
		case ed25519.PublicKey:
			if p, ok := pub.(ed25519.PublicKey); ok && bytes.Equal(p, k) {
				return true
			}
		case *ecdsa.PublicKey:
			if p, ok := pub.(*ecdsa.PublicKey); ok && p.Equal(k) {
				return true
			}
		}
	}
	return false
}

// CheckIndex checks that envelope is a trusted signature of the index
// whose bytes hash to indexHash ("sha256:" and hex), and answers what it
// signed.
func CheckIndex(envelope []byte, trusted []crypto.PublicKey, indexHash string) (Body, error) {
	signed, err := Verify(envelope, trusted)
	if err != nil {
		return Body{}, err
	}
	var b Body
	if err := json.Unmarshal(signed, &b); err != nil || b.IndexHash == "" {
		return Body{}, errors.New("the signature does not sign a pack index (no indexHash)")
	}
	if b.IndexHash != indexHash {
		return Body{}, fmt.Errorf("the signature is over another index: it signs %s, this index is %s", b.IndexHash, indexHash)
	}
	return b, nil
}
