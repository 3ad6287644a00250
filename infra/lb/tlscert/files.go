package tlscert

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/trust"
)

// fileSet is the certificate files as read once.
type fileSet struct {
	certs []named
}

// named is one certificate and the names it serves (its DNS SANs, else its common name).
type named struct {
	cert  *tls.Certificate
	names []string
	file  string // its certificate file, for the log
}

// readFiles reads every certificate and key of files, refusing with the file, the key and the
// fix: a file that is missing or does not parse, a key any other user may read, a certificate
// another user may write (a chain of theirs for the same key would be served), a key that does
// not match its certificate. A certificate with no DNS name (nor common name) is kept: it serves
// no name by SNI, only as the default (the first file's), e.g. for clients that dial an IP.
func readFiles(files []config.TLSCertificate) (*fileSet, error) {
	set := &fileSet{}
	for i, f := range files {
		key := fmt.Sprintf("balancer.tls.certificates[%d]", i)
		if err := trust.CheckPrivate(f.Key, os.Getuid()); err != nil {
			return nil, fmt.Errorf("%s.key %s: %w", key, f.Key, err)
		}
		if err := trust.Check(f.Cert, os.Getuid()); err != nil {
			return nil, fmt.Errorf("%s.cert %s: %w", key, f.Cert, err)
		}
		c, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, fmt.Errorf("%s: cert %s, key %s: %w (both PEM: the chain, leaf first, and its private key)", key, f.Cert, f.Key, err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			return nil, fmt.Errorf("%s.cert %s: %w", key, f.Cert, err)
		}
		c.Leaf = leaf
		names := leaf.DNSNames
		if len(names) == 0 && leaf.Subject.CommonName != "" {
			names = []string{leaf.Subject.CommonName}
		}
		for j := range names {
			names[j] = strings.ToLower(names[j])
		}
		set.certs = append(set.certs, named{cert: &c, names: names, file: f.Cert})
	}
	return set, nil
}

// match is the first certificate serving name: exactly, or by a wildcard of its first label
// (*.example.com serves a.example.com, not example.com nor a.b.example.com); nil for none.
func (s *fileSet) match(name string) *tls.Certificate {
	if name == "" {
		return nil
	}
	wild := ""
	if i := strings.IndexByte(name, '.'); i > 0 {
		wild = "*" + name[i:]
	}
	for _, c := range s.certs {
		if slices.Contains(c.names, name) || wild != "" && slices.Contains(c.names, wild) {
			return c.cert
		}
	}
	return nil
}

// names are every name the set serves, for the log.
func (s *fileSet) names() []string {
	var out []string
	for _, c := range s.certs {
		out = append(out, c.names...)
	}
	return out
}

// stamps is what says the files changed: each one's size and modification time, one string.
func stamps(files []config.TLSCertificate) string {
	var b strings.Builder
	for _, f := range files {
		for _, p := range []string{f.Cert, f.Key} {
			if fi, err := os.Stat(p); err == nil {
				fmt.Fprintf(&b, "%s %d %d;", p, fi.Size(), fi.ModTime().UnixNano())
			} else {
				fmt.Fprintf(&b, "%s missing;", p)
			}
		}
	}
	return b.String()
}

// outOfDate says, per certificate of s that clients would refuse at now (expired, or not valid
// yet), its file, names and validity: it loads (a renewal may be on its way, and a listener
// with no certificate serves no one), but the log must say so.
func (s *fileSet) outOfDate(now time.Time) []string {
	var out []string
	for _, c := range s.certs {
		switch leaf := c.cert.Leaf; {
		case now.After(leaf.NotAfter):
			out = append(out, fmt.Sprintf("%s (%s) expired at %s", c.file, strings.Join(c.names, " "), leaf.NotAfter.UTC().Format(time.RFC3339)))
		case now.Before(leaf.NotBefore):
			out = append(out, fmt.Sprintf("%s (%s) is not valid before %s", c.file, strings.Join(c.names, " "), leaf.NotBefore.UTC().Format(time.RFC3339)))
		}
	}
	return out
}
