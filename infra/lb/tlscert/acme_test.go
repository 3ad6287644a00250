package tlscert

import (
	"crypto/tls"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
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
