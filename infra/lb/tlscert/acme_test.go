package tlscert

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/testpki"
)

// An ACME domain written as a fully qualified name (a trailing dot) or in capitals is the name
// a client asks for in its SNI: its handshake goes to ACME, not to "no certificate".
func TestACMEDomainMatchesSNIWhateverItsSpelling(t *testing.T) {
	for _, domain := range []string{"shop.example.com.", "Shop.Example.COM"} {
		s, err := New(config.BalancerTLS{HandshakeTimeout: time.Second, ACME: config.ACME{Domains: []string{domain},
			Email: "ops@example.com", Directory: "https://127.0.0.1:1/directory", CacheDir: filepath.Join(t.TempDir(), "acme")}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// no CA listens on 127.0.0.1:1: ACME fails, but it is asked
		_, err = s.GetCertificate(&tls.ClientHelloInfo{ServerName: "shop.example.com", SupportedProtos: []string{"http/1.1"}})
		if err == nil || strings.Contains(err.Error(), "no certificate for") {
			t.Errorf("acme.domains [%q], SNI shop.example.com: %v, want ACME asked", domain, err)
		}
	}
}

// acme.ca_file decides which ACME server the LB believes (and so whose certificates it
// serves): a file another user could write is refused, naming the key and the directory's mode.
func TestACMECAFileAnotherUserCouldWriteIsRefused(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil { // whatever the umask
		t.Fatal(err)
	}
	ca := testpki.New(t, "acme-ca").WriteCert(t, filepath.Join(open, "ca.pem"))
	_, err := New(config.BalancerTLS{HandshakeTimeout: time.Second, ACME: config.ACME{Domains: []string{"shop.example.com"},
		Email: "ops@example.com", Directory: "https://127.0.0.1:1/directory", CAFile: ca,
		CacheDir: filepath.Join(t.TempDir(), "acme")}}, nil)
	if err == nil || !strings.Contains(err.Error(), "balancer.tls.acme.ca_file") || !strings.Contains(err.Error(), "0777") {
		t.Fatalf("a ca_file in a 0777 directory: %v; want a refusal naming balancer.tls.acme.ca_file and the mode", err)
	}
}
