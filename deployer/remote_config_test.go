package deployer

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/secrets"
)

// The config stream carries the config, then the secrets' values, then ConfigEnd; what follows
// stays unread (the sender's connection). A stream whose secrets never end is refused.
func TestTheConfigStreamCarriesTheSecretsAfterTheConfig(t *testing.T) {
	vals := map[string]secrets.Value{"A": "x\ny", "B": `q"uote`}
	stream := append(configStream([]byte("hosts: []\n"), vals), "after\n"...)
	r := bufio.NewReader(bytes.NewReader(stream))
	data, got, framed, err := ReadConfigStream(r)
	if err != nil || !framed || string(data) != "hosts: []\n\n" || got["A"] != "x\ny" || got["B"] != `q"uote` {
		t.Fatalf("read %q, %v, framed %v, %v", data, got, framed, err)
	}
	if rest, _ := r.ReadString('\n'); rest != "after\n" {
		t.Errorf("read past ConfigEnd: the rest is %q", rest)
	}
	_, got, _, err = ReadConfigStream(bufio.NewReader(bytes.NewReader(configStream([]byte("hosts: []\n"), nil))))
	if err != nil || got != nil {
		t.Errorf("no secrets sent: %v, %v", got, err)
	}
	cut := strings.TrimSuffix(string(configStream([]byte("hosts: []\n"), vals)), ConfigEnd+"\n")
	if _, _, _, err := ReadConfigStream(bufio.NewReader(strings.NewReader(cut))); err == nil || strings.Contains(err.Error(), "uote") {
		t.Errorf("secrets with no end: %v, want refused without the values", err)
	}
}
