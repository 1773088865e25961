package main

import (
	"context"
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
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
	port := func(s *served) string {
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
	// MCP on the same listener, over the same mutual TLS.
	mcpTLS := func(certs ...tls.Certificate) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		hc := &http.Client{Transport: bearerOver{s.token, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}}}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "tls-test", Version: "1"}, nil).Connect(ctx,
			&sdk.StreamableClientTransport{Endpoint: "https://127.0.0.1:" + p + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
		if err != nil {
			return err
		}
		defer cs.Close()
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "conformance.echo", Arguments: map[string]any{"message": "over mTLS"}})
		if err == nil && (r.IsError || mcpText(r) != `{"message":"over mTLS"}`) {
			err = fmt.Errorf("answered %s", mcpText(r))
		}
		return err
	}
	if err := mcpTLS(clientCert); err != nil {
		t.Fatalf("MCP over mutual TLS: %v", err)
	}
	if err := mcpTLS(); err == nil {
		t.Fatal("MCP over mutual TLS served a client without a certificate")
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

// TestSIGHUPReopens: SIGHUP reopens the audit log (logrotate renames it,
// then signals: the next call's line goes to a new file at the path) and
// the TLS certificate (a new handshake gets the new one), writes a
// reopened record, and packd goes on serving; a certificate it cannot read
// is a reopen-failed record, and the one it had stays.
func TestSIGHUPReopens(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c1, k1 := ca.issue(t, 11, x509.ExtKeyUsageServerAuth)
	cert, key := write("server.pem", c1), write("server.key", k1)
	audit := filepath.Join(dir, "audit.jsonl")
	s := launch(t, conformance, nil, "--tls-cert", cert, "--tls-key", key, "--audit-log", audit)
	rec := record(t, s.stderr.waitFor(t, 60*time.Second, kindIs("listening")))
	base := fmt.Sprintf("https://127.0.0.1:%d", int(rec["port"].(float64)))
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	// call invokes the echo on a new connection and answers the serial of
	// the certificate the handshake got.
	call := func(msg string) int64 {
		t.Helper()
		c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
		req, _ := http.NewRequest("POST", base+"/v1/invoke", strings.NewReader(invokeBody("conformance.echo", "", `{"message":"`+msg+`"}`, conformanceCtx)))
		for k, v := range s.auth() {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !strings.Contains(string(b), msg) {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
	}
	// auditLines waits for n lines in the file at path.
	auditLines := func(path string, n int) string {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; {
			b, _ := os.ReadFile(path)
			if strings.Count(string(b), "\n") >= n {
				return string(b)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s holds %q, want %d lines", path, b, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	hup := func(kind string) map[string]any {
		t.Helper()
		before := len(s.stderr.snapshot())
		if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		return record(t, s.stderr.waitFor(t, 20*time.Second, func(l string) bool {
			return kindIs(kind)(l) && !slices.Contains(s.stderr.snapshot()[:before], l)
		}))
	}

	if serial := call("first"); serial != 11 {
		t.Fatalf("serial %d", serial)
	}
	auditLines(audit, 1)
	if err := os.Rename(audit, audit+".1"); err != nil {
		t.Fatal(err)
	}
	c2, k2 := ca.issue(t, 12, x509.ExtKeyUsageServerAuth)
	write("server.pem", c2)
	write("server.key", k2)
	if r := hup("reopened"); r["auditLog"] != true || r["tls"] != true {
		t.Fatalf("reopened record %v", r)
	}
	if serial := call("second"); serial != 12 {
		t.Fatalf("after SIGHUP the handshake got serial %d, want the new certificate's 12", serial)
	}
	if got := auditLines(audit, 1); !strings.Contains(got, `"toolId":"conformance.echo"`) || strings.Count(got, "\n") != 1 {
		t.Fatalf("the new audit log: %q", got)
	}
	if old := auditLines(audit+".1", 1); strings.Count(old, "\n") != 1 {
		t.Fatalf("the rotated audit log gained lines: %q", old)
	}

	write("server.key", []byte("not a key"))
	if r := hup("reopen-failed"); !strings.Contains(fmt.Sprint(r["problems"]), "TLS certificate") {
		t.Fatalf("reopen-failed record %v", r)
	}
	if serial := call("third"); serial != 12 {
		t.Fatalf("after a failed reopen the handshake got serial %d, want 12 still", serial)
	}
}
