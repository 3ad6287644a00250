package agent

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/testpki"
)

// With a client CA (`agent-server --client-ca`), ServerTLS lets in only an agent whose
// certificate that CA issued: over a real TLS handshake on loopback, an agent without a
// certificate, or with one of another CA, is refused before any message is read, and one with
// the CA's certificate has its message applied and acknowledged. The configurations are the ones
// `zero502 agent-server` and `zero502 agent` build from their flags, read from PEM files.
func TestAClientCANeedsEachAgentsCertificateFromIt(t *testing.T) {
	dir := t.TempDir()
	ca, rogue := testpki.New(t, "agents CA"), testpki.New(t, "another CA")
	caFile := ca.WriteCert(t, filepath.Join(dir, "ca.pem"))
	pair := func(ca *testpki.CA, name string, usage x509.ExtKeyUsage, dnsName string) (string, string) {
		return testpki.WritePair(t, ca.Issue(t, usage, dnsName), filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem"))
	}
	originCert, originKey := pair(ca, "origin", x509.ExtKeyUsageServerAuth, originName)
	agentCert, agentKey := pair(ca, "agent", x509.ExtKeyUsageClientAuth, "agent-1")
	rogueCert, rogueKey := pair(rogue, "rogue", x509.ExtKeyUsageClientAuth, "agent-1")

	serverConf, err := ServerTLS(originCert, originKey, caFile)
	if err != nil {
		t.Fatal(err)
	}
	srv, origin, applied := startServer(t, serverConf)

	send := func(certFile, keyFile, id string) (Frame, error) {
		conf, err := ClientTLS(originName, caFile, certFile, keyFile, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(conf.Certificates) == 1 { // sent even when the server's CA list does not name its issuer
			pair := conf.Certificates[0]
			conf.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
		}
		c, err := tls.Dial("tcp", origin, conf)
		if err != nil {
			return Frame{}, err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if err := writeFrame(c, Frame{Kind: kindMsg, ID: id, Body: "hello"}); err != nil {
			return Frame{}, err
		}
		return readFrame(c)
	}
	for _, tc := range []struct{ name, cert, key, id string }{
		{"no client certificate", "", "", "m-none"},
		{"a certificate of another CA", rogueCert, rogueKey, "m-rogue"},
	} {
		ack, err := send(tc.cert, tc.key, tc.id)
		if err == nil {
			t.Fatalf("%s: acknowledged %+v; want the handshake refused", tc.name, ack)
		}
		if !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: %v; want a TLS alert about the certificate", tc.name, err)
		}
	}
	ack, err := send(agentCert, agentKey, "m-1")
	if err != nil || ack.Kind != kindAck || ack.ID != "m-1" {
		t.Fatalf("an agent with the CA's certificate: ack %+v, %v; want m-1 acknowledged", ack, err)
	}
	got := applied()
	if got["m-1"] != 1 || got["m-none"] != 0 || got["m-rogue"] != 0 {
		t.Fatalf("applied %v; want m-1 once and nothing from the refused agents", got)
	}
	if c := srv.Counts(); c.Sessions != 1 {
		t.Fatalf("counts %+v; want one session (the refused agents never had one)", c)
	}

	// no CA file, or one that holds no certificate: refused before serving, naming the flag
	if _, err := ServerTLS(originCert, originKey, filepath.Join(dir, "missing.pem")); err == nil || !strings.Contains(err.Error(), "--client-ca") {
		t.Errorf("a missing --client-ca file: %v; want an error naming --client-ca", err)
	}
	if _, err := ServerTLS(originCert, originKey, originKey); err == nil || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Errorf("a --client-ca that holds a key: %v; want \"holds no PEM certificate\"", err)
	}
}

// The files that decide who is trusted are held to infra/trust, as the LB's TLS files are: a
// --client-ca another user may write would let them add their own CA and have their messages
// applied, an agent's --ca one they may write would let them stand in for the origin, and a key
// others may read is no longer a secret. Each is refused naming its flag, before anything serves.
func TestTLSFilesAnotherUserCouldChangeOrReadAreRefused(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.New(t, "agents CA")
	caFile := ca.WriteCert(t, filepath.Join(dir, "ca.pem"))
	cert, key := testpki.WritePair(t, ca.Issue(t, x509.ExtKeyUsageServerAuth, originName),
		filepath.Join(dir, "origin.pem"), filepath.Join(dir, "origin-key.pem"))
	if _, err := ServerTLS(cert, key, caFile); err != nil {
		t.Fatalf("files of this user's, 0600: %v", err)
	}
	chmod := func(path string, mode os.FileMode) {
		t.Helper()
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}

	chmod(caFile, 0o666)
	if _, err := ServerTLS(cert, key, caFile); err == nil || !strings.Contains(err.Error(), "--client-ca") || !strings.Contains(err.Error(), "0666") {
		t.Errorf("a --client-ca anyone may write: %v; want a refusal naming --client-ca and its mode", err)
	}
	if _, err := ClientTLS(originName, caFile, "", "", false); err == nil || !strings.Contains(err.Error(), "--ca") || !strings.Contains(err.Error(), "0666") {
		t.Errorf("an agent's --ca anyone may write: %v; want a refusal naming --ca and its mode", err)
	}
	chmod(caFile, 0o644)

	chmod(key, 0o644)
	if _, err := ServerTLS(cert, key, caFile); err == nil || !strings.Contains(err.Error(), "--key") || !strings.Contains(err.Error(), "0644") {
		t.Errorf("a --key others may read: %v; want a refusal naming --key and its mode", err)
	}
	if _, err := ClientTLS(originName, caFile, cert, key, false); err == nil || !strings.Contains(err.Error(), "--key") || !strings.Contains(err.Error(), "0644") {
		t.Errorf("an agent's --key others may read: %v; want a refusal naming --key and its mode", err)
	}
	chmod(key, 0o600)

	chmod(cert, 0o666)
	if _, err := ServerTLS(cert, key, caFile); err == nil || !strings.Contains(err.Error(), "--cert") || !strings.Contains(err.Error(), "0666") {
		t.Errorf("a --cert anyone may write: %v; want a refusal naming --cert and its mode", err)
	}
}
