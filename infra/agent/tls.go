package agent

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/zero502/zero502/infra/trust"
)

// ServerTLS is the TLS configuration of a Server: the origin's certificate (certFile, keyFile)
// and, unless clientCA is empty, a client certificate every agent must present, chained to the
// PEM CA in clientCA (tls.RequireAndVerifyClientCert). An empty clientCA accepts any client;
// `zero502 agent-server` allows that only with --no-client-cert. Every file is held to
// infra/trust (loadPair, readPool): the CA decides whose messages are applied.
func ServerTLS(certFile, keyFile, clientCA string) (*tls.Config, error) {
	pair, err := loadPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	conf := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if clientCA == "" {
		return conf, nil
	}
	if conf.ClientCAs, err = readPool(clientCA); err != nil {
		return nil, fmt.Errorf("--client-ca %s: %w; give the CA that issued the agents' client certificates", clientCA, err)
	}
	conf.ClientAuth = tls.RequireAndVerifyClientCert
	return conf, nil
}

// ClientTLS is an agent's TLS configuration: the origin's serverName, verified against the PEM
// CA in caFile (the system roots when empty; not at all when insecure), and the agent's client
// certificate (certFile and keyFile, both or neither).
func ClientTLS(serverName, caFile, certFile, keyFile string, insecure bool) (*tls.Config, error) {
	conf := &tls.Config{ServerName: serverName, InsecureSkipVerify: insecure, MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := readPool(caFile)
		if err != nil {
			return nil, fmt.Errorf("--ca %s: %w; give the CA that issued the origin's certificate", caFile, err)
		}
		conf.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("--cert %q and --key %q: give both or neither", certFile, keyFile)
	}
	if certFile != "" {
		pair, err := loadPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	return conf, nil
}

// loadPair reads a certificate and its key as the LB reads its own (infra/lb/tlscert): a key
// any other user may read is no secret (trust.CheckPrivate), a certificate another user may
// write could be theirs (trust.Check); either is refused naming its flag and the fix.
func loadPair(certFile, keyFile string) (tls.Certificate, error) {
	if err := trust.Check(certFile, os.Getuid()); err != nil {
		return tls.Certificate{}, fmt.Errorf("--cert %s: %w", certFile, err)
	}
	if err := trust.CheckPrivate(keyFile, os.Getuid()); err != nil {
		return tls.Certificate{}, fmt.Errorf("--key %s: %w", keyFile, err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--cert %s --key %s: %w", certFile, keyFile, err)
	}
	return pair, nil
}

// readPool is the certificates of the PEM CA file path (trust.CertPool).
func readPool(path string) (*x509.CertPool, error) { return trust.CertPool(path, os.Getuid()) }
