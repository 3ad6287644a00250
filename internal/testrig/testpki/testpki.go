// Package testpki gives a test a certificate authority of its own: the certificates it issues
// (a server's for names or IP addresses, a client's), the pool that trusts it, and PEM files for
// the commands that read them. One implementation for every package whose tests speak TLS.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a test's certificate authority, valid for an hour either side of now.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

var serial atomic.Int64

// New makes a CA named name.
func New(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, key: key}
}

// Pool is the pool that trusts ca alone.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool
}

// Issue is a certificate of ca for usage (server or client auth), for names: each an IP
// address or a DNS name; the first is the subject's common name.
func (ca *CA) Issue(t testing.TB, usage x509.ExtKeyUsage, names ...string) tls.Certificate {
	t.Helper()
	return ca.IssueValid(t, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), usage, names...)
}

// IssueValid is Issue of a certificate valid from notBefore to notAfter (an expired one, say).
func (ca *CA) IssueValid(t testing.TB, notBefore, notAfter time.Time, usage x509.ExtKeyUsage, names ...string) tls.Certificate {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)),
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	for i, n := range names {
		if i == 0 {
			tmpl.Subject.CommonName = n
		}
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// Server is a server's TLS config with a certificate of ca for names.
func (ca *CA) Server(t testing.TB, names ...string) *tls.Config {
	t.Helper()
	return &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, x509.ExtKeyUsageServerAuth, names...)}}
}

// Client is a client's TLS config that trusts ca alone and expects serverName.
func (ca *CA) Client(serverName string) *tls.Config {
	return &tls.Config{RootCAs: ca.Pool(), ServerName: serverName, MinVersion: tls.VersionTLS12}
}

// WriteCert writes ca's certificate to path as PEM and returns path.
func (ca *CA) WriteCert(t testing.TB, path string) string {
	t.Helper()
	return writePEM(t, path, "CERTIFICATE", ca.Cert.Raw)
}

// WritePair writes c's certificate and key to certPath and keyPath (0600) as PEM.
func WritePair(t testing.TB, c tls.Certificate, certPath, keyPath string) (string, string) {
	t.Helper()
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return writePEM(t, certPath, "CERTIFICATE", c.Certificate[0]), writePEM(t, keyPath, "PRIVATE KEY", keyDER)
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func writePEM(t testing.TB, path, kind string, der []byte) string {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
