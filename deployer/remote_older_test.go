package deployer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zero502/zero502/deployer/ssh"
)

// A host whose zero502 is older than the deployer's refuses what the deployer sends it: a config
// key, a flag or a host command it does not know (the real binary refuses each here, over a real
// ssh login). The session's error says the host's zero502 is older and how to upgrade it, and
// wraps ssh.ErrOlderRemote; a refusal of anything else (a host the config lacks) does not.
func TestAnOlderZero502OnAHostIsSaidToBeOlder(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	withHost := "hosts: [{name: web-1}]\n"
	for _, tc := range []struct {
		what   string
		args   []string
		config string
		older  bool
	}{
		{"a config key it does not know", []string{"host", "look", "--config", "-", "--host", "web-1"}, withHost + "key_of_a_newer_zero502: 1\n", true},
		{"a flag it does not know", []string{"host", "look", "--config", "-", "--host", "web-1", "--flag-of-a-newer-zero502"}, withHost, true},
		{"a host command it does not know", []string{"host", "command-of-a-newer-zero502", "--config", "-"}, withHost, true},
		{"a host its config lacks", []string{"host", "look", "--config", "-", "--host", "web-9"}, withHost, false},
	} {
		sess := ssh.Session{Host: "web-1", Target: s.target(), Binary: bin, Args: tc.args, Input: configStream([]byte(tc.config), nil)}
		err := sess.Run(context.Background())
		if err == nil {
			t.Errorf("%s: the session succeeded; want it refused", tc.what)
			continue
		}
		said := strings.Contains(err.Error(), "older than this deployer's") && strings.Contains(err.Error(), "zero502 host install --ssh "+s.target())
		if errors.Is(err, ssh.ErrOlderRemote) != tc.older || said != tc.older {
			t.Errorf("%s: %v\nwant said older (and how to upgrade) = %v", tc.what, err, tc.older)
		}
	}
}
