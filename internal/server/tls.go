package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// TLSConfig is TLS on the service's listener: a certificate and its key
// (PEM files), and, for mutual TLS, the CAs a client's certificate must
// chain to. The zero value serves plain HTTP (behind a mesh or a load
// balancer that terminates TLS).
type TLSConfig struct {
	CertFile, KeyFile string
	// ClientCAFile: "" asks no client certificate; else every client must
	// present one that chains to these CAs.
	ClientCAFile string
}

// On reports whether the listener serves TLS.
func (c TLSConfig) On() bool { return c.CertFile != "" || c.KeyFile != "" }

// certificates holds the listener's certificate, swapped whole by Reload
// so that a new handshake gets the new one and none sees half of it.
type certificates struct {
	cfg  TLSConfig
	cert atomic.Pointer[tls.Certificate]
}

// load reads the certificate and key again; on an error the one served
// stays.
func (c *certificates) load() error {
	cert, err := tls.LoadX509KeyPair(c.cfg.CertFile, c.cfg.KeyFile)
	if err != nil {
		return fmt.Errorf("TLS certificate %s with key %s: %w", c.cfg.CertFile, c.cfg.KeyFile, err)
	}
	c.cert.Store(&cert)
	return nil
}

// serverTLS is the tls.Config of the listener: TLS 1.2 or later, HTTP/1.1,
// the certificate read now (and again by Reload), and the client CAs.
func serverTLS(cfg TLSConfig) (*tls.Config, *certificates, error) {
	if cfg.CertFile == "" || cfg.KeyFile == "" {
		return nil, nil, errors.New("TLS needs both a certificate and its key (--tls-cert, --tls-key)")
	}
	certs := &certificates{cfg: cfg}
	if err := certs.load(); err != nil {
		return nil, nil, err
	}
	tc := &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return certs.cert.Load(), nil
		},
	}
	if cfg.ClientCAFile != "" {
		pem, err := os.ReadFile(cfg.ClientCAFile)
		if err != nil {
			return nil, nil, fmt.Errorf("TLS client CAs: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("TLS client CAs: %s holds no PEM certificate", cfg.ClientCAFile)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc, certs, nil
}
