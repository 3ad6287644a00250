package tlscert

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/testpki"
)

// A certificate serves its exact names and, by a wildcard, one label below it: never the bare
// domain nor two labels; the first that matches wins.
func TestMatchBySNI(t *testing.T) {
	a, w, b := &tls.Certificate{}, &tls.Certificate{}, &tls.Certificate{}
	set := &fileSet{certs: []named{{cert: a, names: []string{"shop.example.com"}}, {cert: w, names: []string{"*.example.com"}}, {cert: b, names: []string{"api.example.com"}}}}
	for _, c := range []struct {
		name string
		want *tls.Certificate
	}{
		{"shop.example.com", a}, {"api.example.com", w}, {"x.example.com", w},
		{"example.com", nil}, {"a.b.example.com", nil}, {"", nil}, {"other.test", nil},
	} {
		if got := set.match(c.name); got != c.want {
			t.Errorf("match(%q) = %p, want %p", c.name, got, c.want)
		}
	}
}

// The redirect keeps the method (308), the path and the query, and names the HTTPS port unless
// it is 443.
func TestRedirect(t *testing.T) {
	for _, c := range []struct{ port, host, target, want string }{
		{"443", "shop.test", "/a?b=1", "https://shop.test/a?b=1"},
		{"8443", "shop.test:8080", "/a", "https://shop.test:8443/a"},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", c.target, nil)
		req.Host = c.host
		Redirect(c.port).ServeHTTP(rec, req)
		if rec.Code != http.StatusPermanentRedirect || rec.Header().Get("Location") != c.want {
			t.Errorf("%s%s: %d %q, want 308 %s", c.host, c.target, rec.Code, rec.Header().Get("Location"), c.want)
		}
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/", nil)
	req.Host = ""
	Redirect("443").ServeHTTP(rec, req)
	if rec.Code != 400 {
		t.Errorf("no Host: %d, want 400", rec.Code)
	}
}

// A client that reached the redirect listener by an IPv6 literal is sent to that address in
// brackets once, with or without the port it came on.
func TestRedirectKeepsAnIPv6LiteralInBrackets(t *testing.T) {
	for _, c := range []struct{ port, host, want string }{
		{"8443", "[2001:db8::1]", "https://[2001:db8::1]:8443/a"},
		{"8443", "[2001:db8::1]:80", "https://[2001:db8::1]:8443/a"},
		{"443", "[2001:db8::1]:80", "https://[2001:db8::1]/a"},
		{"443", "[2001:db8::1]", "https://[2001:db8::1]/a"},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/a", nil)
		req.Host = c.host
		Redirect(c.port).ServeHTTP(rec, req)
		if rec.Code != http.StatusPermanentRedirect || rec.Header().Get("Location") != c.want {
			t.Errorf("Host %s, HTTPS port %s: %d %q, want 308 %s", c.host, c.port, rec.Code, rec.Header().Get("Location"), c.want)
		}
	}
}

// An expired certificate, or one not valid yet, still loads (a renewal may be on its way; no
// certificate serves no one), but the log warns, naming its file, its names and the date.
func TestACertificateClientsWouldRefuseIsLoggedAsAWarning(t *testing.T) {
	ca := testpki.New(t, "test-ca")
	dir := t.TempDir()
	var files []config.TLSCertificate
	for _, c := range []struct {
		name     string
		from, to time.Time
	}{
		{"old.example.com", time.Now().Add(-48 * time.Hour), time.Now().Add(-24 * time.Hour)},
		{"new.example.com", time.Now().Add(24 * time.Hour), time.Now().Add(48 * time.Hour)},
		{"good.example.com", time.Now().Add(-time.Hour), time.Now().Add(time.Hour)},
	} {
		cert, key := testpki.WritePair(t, ca.IssueValid(t, c.from, c.to, x509.ExtKeyUsageServerAuth, c.name),
			filepath.Join(dir, c.name+".crt"), filepath.Join(dir, c.name+".key"))
		files = append(files, config.TLSCertificate{Cert: cert, Key: key})
	}
	var logs bytes.Buffer
	if _, err := New(config.BalancerTLS{HandshakeTimeout: time.Second, Certificates: files}, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, want := range []string{"old.example.com.crt (old.example.com) expired at", "new.example.com.crt (new.example.com) is not valid before", "level=WARN"} {
		if !strings.Contains(out, want) {
			t.Errorf("log:\n%s\nwant %q", out, want)
		}
	}
	if strings.Contains(out, "good.example.com") {
		t.Errorf("log:\n%s\nwant nothing said of the valid certificate", out)
	}
}
