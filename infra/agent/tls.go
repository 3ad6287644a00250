package agent

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ServerTLS is the TLS configuration of a Server: the origin's certificate (certFile, keyFile)
// and, unless clientCA is empty, a client certificate every agent must present, chained to the
// PEM CA in clientCA (tls.RequireAndVerifyClientCert). An empty clientCA accepts any client;
// `zero502 agent-server` allows that only with --no-client-cert.
func ServerTLS(certFile, keyFile, clientCA string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--cert %s --key %s: %w", certFile, keyFile, err)
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
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("--cert %s --key %s: %w", certFile, keyFile, err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	return conf, nil
}

// readPool is the certificates of the PEM file path.
func readPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("holds no PEM certificate")
	}
	return pool, nil
}
