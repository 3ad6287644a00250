package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/agent"
	"github.com/zero502/zero502/infra/edgepick"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
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
		// Through an edge on this host, a client on the internet arrives from loopback.
		{"server without client certs behind trusted edges", []string{"agent-server", "--listen", "127.0.0.1:0", "--cert", "c.pem", "--key", "k.pem", "--no-client-cert", "--trusted", "127.0.0.1"},
			[]string{"--no-client-cert with --trusted 127.0.0.1", "relays clients from anywhere", "--client-ca"}},
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

// Every stdin line is a message, a line longer than bufio.Scanner's 64 KiB too; a line over the
// message limit is dropped with a warning naming its size and the limit, and the lines after it
// are read on.
func TestAgentFeedSendsStdinLinesUpToTheMessageLimitAndReadsOnPastALongerOne(t *testing.T) {
	var logs syncbuffer.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a := &agent.Agent{Picker: &edgepick.Picker{}, Outbox: agent.NewOutbox(10)}
	long := strings.Repeat("x", 70<<10)
	over := strings.Repeat("y", agent.MaxFrame+1)
	in := strings.NewReader(long + "\nafter the long line\n" + over + "\nafter the line over the limit\r\nno newline at the end")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	agentFeed(ctx, a, in, 0, log)

	poll.Until(t, 5*time.Second, "four messages queued", func() bool { return a.Pending() >= 4 })
	var queued []int
	var dropped []map[string]any
	poll.Until(t, 5*time.Second, "the log of the four messages and the dropped line", func() bool {
		queued, dropped = nil, nil
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				continue
			}
			switch rec["msg"] {
			case "agent: message queued":
				queued = append(queued, int(rec["bytes"].(float64)))
			case "agent: stdin line dropped: longer than a message can be; split it into smaller lines":
				dropped = append(dropped, rec)
			}
		}
		return len(queued) == 4 && len(dropped) == 1
	})
	if want := []int{len(long), len("after the long line"), len("after the line over the limit"), len("no newline at the end")}; !slices.Equal(queued, want) {
		t.Errorf("queued bodies of %v bytes; want %v: every line but the one over the limit, without its line ending", queued, want)
	}
	if d := dropped[0]; d["level"] != "WARN" || d["bytes"] != float64(len(over)) || d["limit_bytes"] != float64(agent.MaxFrame) {
		t.Errorf("the dropped line's log %v; want a warning naming its %d bytes and the %d-byte limit", d, len(over), agent.MaxFrame)
	}
	if n := a.Pending(); n != 4 {
		t.Errorf("%d messages pending; want the four lines within the limit", n)
	}
}
