package trust

import (
	"crypto/x509"
	"errors"
	"io"
)

// CertPool is the certificates of the PEM file path, once Open holds it to the rule: a CA file
// decides whom a TLS peer trusts, so one another user could write would let them add their own.
func CertPool(path string, uid int) (*x509.CertPool, error) {
	f, err := Open(path, uid)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pem, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("holds no PEM certificate")
	}
	return pool, nil
}
