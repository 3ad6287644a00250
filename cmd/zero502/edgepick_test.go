package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// runEdgePick runs `zero502 edgepick ARGS...` in-process and returns stdout, stderr and the exit
// code.
func runEdgePick(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code, err := execute(nil, &out, &errOut, append([]string{"edgepick"}, args...)...)
	if err != nil {
		errOut.WriteString("\n" + err.Error())
	}
	return out.String(), errOut.String(), code
}

func TestEdgePickRefusesBadFlagsNamingFlagValueAndRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"neither name nor addrs", nil, []string{"--name", "--addrs"}},
		{"both", []string{"--name", "edge.example.test:443", "--addrs", "127.0.0.1:1"}, []string{"not both"}},
		{"name without a port", []string{"--name", "edge.example.test"}, []string{"--name", `"edge.example.test"`, "host:port"}},
		{"name port 0", []string{"--name", "edge.example.test:0"}, []string{"--name", "1 to 65535"}},
		{"addrs not an IP", []string{"--addrs", "edge:443", "--insecure-skip-verify"}, []string{"--addrs", `"edge:443"`, "IP:PORT"}},
		{"addrs without a server name", []string{"--addrs", "127.0.0.1:1,127.0.0.1:2"}, []string{"--server-name", "--insecure-skip-verify"}},
		{"zero budget", []string{"--addrs", "127.0.0.1:1", "--insecure-skip-verify", "--budget", "0s"}, []string{"--budget", "0s", "more than 0"}},
		{"not a duration", []string{"--addrs", "127.0.0.1:1", "--budget", "soon"}, []string{"--budget", `"soon"`, "must be a duration with a unit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runEdgePick(t, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s%s", code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("the message does not say %q:\n%s", w, errOut)
				}
			}
		})
	}
}

func TestEdgePickMeasuresThenReadsTheStateFile(t *testing.T) {
	var edges []string
	for range 2 {
		s := httptest.NewTLSServer(http.NotFoundHandler())
		t.Cleanup(s.Close)
		edges = append(edges, s.Listener.Addr().String())
	}
	state := filepath.Join(t.TempDir(), "edgepick.json")
	args := []string{"--addrs", strings.Join(edges, ","), "--insecure-skip-verify", "--state", state, "--json"}

	var got struct {
		Chosen    string `json:"chosen"`
		FromState bool   `json:"from_state"`
		Ranking   []struct {
			Addr, Handshake string
		} `json:"ranking"`
	}
	for i, wantFromState := range []bool{false, true} {
		out, errOut, code := runEdgePick(t, args...)
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s%s", i+1, code, out, errOut)
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("run %d: --json output does not parse: %v\n%s", i+1, err, out)
		}
		if got.FromState != wantFromState || (got.Chosen != edges[0] && got.Chosen != edges[1]) || len(got.Ranking) != 2 {
			t.Errorf("run %d: %+v, want a choice among %v with from_state %v", i+1, got, edges, wantFromState)
		}
	}

	out, _, code := runEdgePick(t, "--addrs", strings.Join(edges, ","), "--insecure-skip-verify")
	if code != 0 || !strings.Contains(out, "HANDSHAKE") || !strings.Contains(out, "choice: ") {
		t.Errorf("text output (exit %d) lacks the table or the choice:\n%s", code, out)
	}
}

func TestEdgePickWithOneCandidateHasNothingToChoose(t *testing.T) {
	out, errOut, code := runEdgePick(t, "--addrs", "127.0.0.1:9", "--insecure-skip-verify")
	if code != 0 || !strings.Contains(out, "nothing to choose") {
		t.Errorf("exit %d, want 0 and nothing to choose:\n%s%s", code, out, errOut)
	}
}

func TestEdgePickWithNoEdgeAnsweringExitsOne(t *testing.T) {
	var closed []string
	var open []net.Listener
	for range 2 { // both held open until both ports are known, so the kernel cannot hand out one twice
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed = append(closed, ln.Addr().String())
		open = append(open, ln)
	}
	for _, ln := range open {
		_ = ln.Close()
	}
	out, errOut, code := runEdgePick(t, "--addrs", strings.Join(closed, ","), "--insecure-skip-verify")
	if code != 1 || !strings.Contains(out, "no choice") || !strings.Contains(out, "TCP connect") {
		t.Errorf("exit %d, want 1 with no choice and why:\n%s%s", code, out, errOut)
	}
}
