package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA is a certificate authority made for a test, and what it signed.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "packd test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a certificate for 127.0.0.1 (server) or a client, and
// answers it and its key in PEM.
func (ca *testCA) issue(t *testing.T, serial int64, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: fmt.Sprint("packd test ", serial)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// TestServiceTLS: with --tls-cert and --tls-key packd serves calls over
// TLS (and not in plain HTTP); with --tls-client-ca it serves only a
// client whose certificate that CA signed; a certificate without its key,
// or one it cannot read, is refused before it listens.
func TestServiceTLS(t *testing.T) {
	dir := t.TempDir()
	ca, other := newTestCA(t), newTestCA(t)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sc, sk := ca.issue(t, 2, x509.ExtKeyUsageServerAuth)
	cert, key, caFile := write("server.pem", sc), write("server.key", sk), write("ca.pem", ca.pem)
	cc, ck := ca.issue(t, 3, x509.ExtKeyUsageClientAuth)
	clientCert, err := tls.X509KeyPair(cc, ck)
	if err != nil {
		t.Fatal(err)
	}
	oc, ok := other.issue(t, 4, x509.ExtKeyUsageClientAuth)
	strangerCert, _ := tls.X509KeyPair(oc, ok)
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	get := func(base string, certs ...tls.Certificate) (int, string, error) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}}
		resp, err := c.Get(base + "/healthz")
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	port := func(s *service) string {
		rec := record(t, s.stderr.waitFor(t, 60*time.Second, kindIs("listening")))
		if rec["tls"] == nil {
			t.Errorf("the listening record does not say TLS: %v", rec)
		}
		return fmt.Sprint(int(rec["port"].(float64)))
	}

	s := launch(t, conformance, nil, "--tls-cert", cert, "--tls-key", key)
	p := port(s)
	if code, body, err := get("https://127.0.0.1:" + p); err != nil || code != 200 || body != `{"status":"ok"}` {
		t.Fatalf("over TLS: %d %s %v", code, body, err)
	}
	if resp, err := http.Get("http://127.0.0.1:" + p + "/healthz"); err == nil && resp.StatusCode == 200 {
		t.Fatal("plain HTTP answered 200 on the TLS listener")
	}

	s = launch(t, conformance, map[string]string{"PACKD_TLS_CERT": cert, "PACKD_TLS_KEY": key, "PACKD_TLS_CLIENT_CA": caFile})
	p = port(s)
	if code, _, err := get("https://127.0.0.1:"+p, clientCert); err != nil || code != 200 {
		t.Fatalf("mutual TLS with the CA's client certificate: %d %v", code, err)
	}
	if _, _, err := get("https://127.0.0.1:" + p); err == nil {
		t.Fatal("mutual TLS served a client without a certificate")
	}
	if _, _, err := get("https://127.0.0.1:"+p, strangerCert); err == nil {
		t.Fatal("mutual TLS served a client whose certificate another CA signed")
	}

	for _, c := range []struct {
		args []string
		kind string
		want string
	}{
		{[]string{"--tls-cert", cert}, "config-invalid", "--tls-cert and --tls-key (or PACKD_TLS_CERT and PACKD_TLS_KEY) go together"},
		{[]string{"--tls-client-ca", caFile}, "config-invalid", "--tls-client-ca (or PACKD_TLS_CLIENT_CA) needs --tls-cert and --tls-key"},
		{[]string{"--tls-cert", cert, "--tls-key", caFile}, "boot-failed", "TLS certificate " + cert + " with key " + caFile},
		{[]string{"--tls-cert", cert, "--tls-key", key, "--tls-client-ca", key}, "boot-failed", "holds no PEM certificate"},
	} {
		s := launch(t, conformance, nil, c.args...)
		line := s.stderr.waitFor(t, 60*time.Second, func(l string) bool { return kindIs("listening")(l) || kindIs(c.kind)(l) })
		if !kindIs(c.kind)(line) || !strings.Contains(line, c.want) {
			t.Errorf("%v: %s\nwant a %s record with %q", c.args, line, c.kind, c.want)
		}
	}
}
