package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestAgentCommandsRefuseBadFlagsNamingFlagValueAndRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no edge", []string{"agent", "--state", "s.json"}, []string{"--name", "--addrs"}},
		{"no state", []string{"agent", "--addrs", "127.0.0.1:1", "--insecure-skip-verify"}, []string{"--state", "required"}},
		{"cert without key", []string{"agent", "--addrs", "127.0.0.1:1", "--insecure-skip-verify", "--state", "s", "--cert", "c.pem"}, []string{"--cert", "--key", "both or neither"}},
		{"ca missing", []string{"agent", "--addrs", "127.0.0.1:1", "--server-name", "o", "--state", "s", "--ca", "/nonexistent.pem"}, []string{"--ca", "/nonexistent.pem"}},
		{"zero outbox", []string{"agent", "--addrs", "127.0.0.1:1", "--insecure-skip-verify", "--state", "s", "--outbox", "0"}, []string{"--outbox", "0", "1 or more"}},
		{"server without cert", []string{"agent-server", "--listen", "127.0.0.1:0"}, []string{"--cert", "required"}},
		{"server without client CA", []string{"agent-server", "--listen", "127.0.0.1:0", "--cert", "c.pem", "--key", "k.pem"},
			[]string{"--client-ca is required", "--no-client-cert"}},
		{"server with both", []string{"agent-server", "--listen", "127.0.0.1:0", "--cert", "c.pem", "--key", "k.pem", "--client-ca", "ca.pem", "--no-client-cert"},
			[]string{"--client-ca ca.pem", "--no-client-cert", "one of them"}},
		{"server without client certs on every address", []string{"agent-server", "--listen", ":9443", "--cert", "c.pem", "--key", "k.pem", "--no-client-cert"},
			[]string{"--no-client-cert with --listen :9443", "not on loopback", "--client-ca"}},
		{"server without client certs on a public address", []string{"agent-server", "--listen", "203.0.113.5:9443", "--cert", "c.pem", "--key", "k.pem", "--no-client-cert"},
			[]string{"--no-client-cert with --listen 203.0.113.5:9443", "not on loopback"}},
		// On loopback --no-client-cert is taken: the run goes on to read --cert (and fails there).
		{"server without client certs on loopback", []string{"agent-server", "--listen", "127.0.0.1:0", "--cert", "c.pem", "--key", "k.pem", "--no-client-cert"},
			[]string{"--cert c.pem"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code, err := execute(nil, &out, &errOut, tc.args...)
			if code != 2 {
				t.Fatalf("err %v, want exit 2\n%s", err, errOut.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the message does not say %q: %v", w, err)
				}
			}
		})
	}
}
