// Package tlscert owns where the in-house LB's certificates come from (balancer.tls): PEM files
// chosen by the client's SNI and reloaded when they change on disk, and certificates an ACME CA
// issues for tls.acme.domains (golang.org/x/crypto/acme/autocert, HTTP-01 on the redirect
// listener or TLS-ALPN-01 on the TLS listener, cached on disk 0600). It hands the LB one
// *tls.Config and the handler of the plain HTTP listener (redirect.go); the LB serves TLS
// connections on the same request path as plain ones.
package tlscert

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/trust"
)

// Source is the LB's certificates: the files' (by SNI) and ACME's.
type Source struct {
	files []config.TLSCertificate
	// loaded is the files' certificates as last read; replaced whole on a reload.
	loaded atomic.Pointer[fileSet]
	acme   *autocert.Manager // nil: no ACME
	log    *slog.Logger
	// Reloads counts the reloads of changed files that took effect.
	Reloads atomic.Uint64
}

// New reads every certificate file of t (refusing a missing or unreadable file, a key another
// user may read, a key that does not match its certificate) and sets up ACME for its domains.
// Nothing is served yet: the caller passes Config to its TLS listener.
func New(t config.BalancerTLS, log *slog.Logger) (*Source, error) {
	s := &Source{files: t.Certificates, log: log}
	set, err := readFiles(t.Certificates)
	if err != nil {
		return nil, err
	}
	s.loaded.Store(set)
	s.warnOutOfDate(set)
	if a := t.ACME; len(a.Domains) > 0 {
		if s.acme, err = newACME(a); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func newACME(a config.ACME) (*autocert.Manager, error) {
	if err := trust.MkdirAll(a.CacheDir, 0o700, os.Getuid()); err != nil {
		return nil, fmt.Errorf("balancer.tls.acme.cache_dir %s: %w", a.CacheDir, err)
	}
	if err := os.Chmod(a.CacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("balancer.tls.acme.cache_dir %s: %w", a.CacheDir, err)
	}
	client := &acme.Client{DirectoryURL: a.Directory}
	if a.CAFile != "" {
		roots, err := trust.CertPool(a.CAFile, os.Getuid()) // it decides which ACME server is believed
		if err != nil {
			return nil, fmt.Errorf("balancer.tls.acme.ca_file %s: %w", a.CAFile, err)
		}
		client.HTTPClient = &http.Client{Timeout: 30 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	}
	// the domains as GetCertificate reads a client's SNI: shop.example.com. is the name a
	// client asks for as shop.example.com, which autocert's whitelist would otherwise refuse
	domains := make([]string, len(a.Domains))
	for i, d := range a.Domains {
		domains[i] = serverName(d)
	}
	return &autocert.Manager{
		Prompt:     autocert.AcceptTOS,
		Cache:      autocert.DirCache(a.CacheDir),
		HostPolicy: autocert.HostWhitelist(domains...),
		Client:     client,
		Email:      a.Email,
	}, nil
}

// Config is the TLS listener's configuration: HTTP/1.1 only (the LB's request path), TLS 1.2
// or later, the certificate by SNI (GetCertificate).
func (s *Source) Config() *tls.Config {
	protos := []string{"http/1.1"}
	if s.acme != nil {
		protos = append(protos, acme.ALPNProto) // TLS-ALPN-01
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: protos, GetCertificate: s.GetCertificate}
}

// GetCertificate picks the certificate for a client: a file whose names match its SNI, else
// ACME's for one of its domains (and every TLS-ALPN-01 challenge), else the first file.
func (s *Source) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	set := s.loaded.Load()
	name := serverName(hello.ServerName)
	if c := set.match(name); c != nil {
		return c, nil
	}
	if s.acme != nil && (name != "" && s.acme.HostPolicy(context.Background(), name) == nil ||
		len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == acme.ALPNProto) {
		c, err := s.acme.GetCertificate(hello)
		if err != nil && s.log != nil {
			s.log.Error("no certificate from ACME", "server_name", hello.ServerName, "err", err)
		}
		return c, err
	}
	if len(set.certs) > 0 {
		return set.certs[0].cert, nil
	}
	return nil, fmt.Errorf("no certificate for %q: add it to balancer.tls.certificates or tls.acme.domains", hello.ServerName)
}

// serverName is name as certificates are chosen by: lower case, without the trailing dot of a
// fully qualified name.
func serverName(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) }

// HTTPHandler is the plain HTTP listener's handler: ACME's HTTP-01 challenges when ACME is on,
// every other request redirected to HTTPS (redirect.go).
func (s *Source) HTTPHandler(httpsPort string) http.Handler {
	h := Redirect(httpsPort)
	if s.acme == nil {
		return h
	}
	challenges := s.acme.HTTPHandler(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if host, _, err := net.SplitHostPort(r.Host); err == nil {
			// autocert checks the name alone against the domains (a CA asks on port 80, whose
			// Host has no port; any other port is the operator's choice)
			r = r.Clone(r.Context())
			r.Host = host
		}
		challenges.ServeHTTP(w, r)
	})
}

// Watch reloads the certificate files every interval until ctx ends when any of them changed
// (size or modification time): new connections get the new certificate, open ones keep theirs.
// A set that does not read (a half-written file, a key that does not match) is logged and the
// last good one kept until the next change.
func (s *Source) Watch(ctx context.Context, interval time.Duration) {
	if len(s.files) == 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	last := stamps(s.files)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := stamps(s.files)
		if now == last {
			continue
		}
		last = now // a set that does not load is tried again on its next change
		set, err := readFiles(s.files)
		if err != nil {
			s.log.Error("certificate files changed but do not load; the last good ones are served", "err", err)
			continue
		}
		s.loaded.Store(set)
		s.Reloads.Add(1)
		s.log.Info("certificate files reloaded", "files", len(s.files), "names", strings.Join(set.names(), " "))
		s.warnOutOfDate(set)
	}
}

// warnOutOfDate logs, at warning level, each certificate of set clients would refuse now.
func (s *Source) warnOutOfDate(set *fileSet) {
	for _, c := range set.outOfDate(time.Now()) {
		if s.log != nil {
			s.log.Warn("certificate served though clients refuse it: replace the file (it is reloaded when it changes)", "certificate", c)
		}
	}
}
