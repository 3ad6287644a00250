package mesh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
)

// startMesh runs one Node per name on loopback, each probing the others, and returns them.
func startMesh(t *testing.T, names ...string) map[string]*Node {
	t.Helper()
	lns := map[string]net.Listener{}
	for _, name := range names {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[name] = ln
	}
	th := DefaultThresholds()
	th.ProbeStaleAfter, th.ReportStaleAfter = 5*time.Second, 5*time.Second
	nodes := map[string]*Node{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, len(names))
	for _, name := range names {
		peers := map[string]string{}
		for _, o := range names {
			if o != name {
				peers[o] = lns[o].Addr().String()
			}
		}
		n := &Node{Name: name, Listen: lns[name].Addr().String(), Listener: lns[name], Peers: peers, Key: testKey,
			ProbeEvery: 300 * time.Millisecond, ProbeTimeout: 250 * time.Millisecond, Thresholds: th}
		if err := n.Open(); err != nil {
			t.Fatal(err)
		}
		nodes[name] = n
		go func() { done <- n.Serve(ctx) }()
	}
	t.Cleanup(func() {
		cancel()
		for range names {
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("serve: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("a node's Serve did not return within 10s of its context ending")
				return
			}
		}
	})
	return nodes
}

// waitFor polls every node's view over HTTP until target's state is want in all of them, or
// fails after deadline with the last views.
func waitFor(t *testing.T, nodes map[string]*Node, target string, want State, deadline time.Duration) {
	t.Helper()
	poll.UntilNil(t, deadline, fmt.Sprintf("%s not %s in every view", target, want), func() error {
		var last []string
		all := true
		for name, n := range nodes {
			s, err := FetchSnapshot(n.Addr(), 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range s.Verdicts {
				if v.Server == target {
					last = append(last, fmt.Sprintf("%s sees %s %s: %s", name, target, v.State, v.Reason))
					all = all && v.State == want
				}
			}
		}
		if !all {
			return errors.New("\n" + strings.Join(last, "\n"))
		}
		return nil
	})
}

func TestMeshOnLoopbackFindsAnUnreachableServerAndHeals(t *testing.T) {
	nodes := startMesh(t, "a", "b", "c")
	waitFor(t, nodes, "c", Up, 20*time.Second)

	nodes["c"].SetReachable(false) // c still reports itself healthy: it looks blocked
	waitFor(t, nodes, "c", Down, 20*time.Second)
	s, err := FetchSnapshot(nodes["a"].Addr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range s.Verdicts {
		if v.Server == "c" && !strings.Contains(v.Reason, "unreachable from 2 of your servers") {
			t.Errorf("c is down for another reason: %s", v.Reason)
		}
	}
	if strings.Contains(strings.Join(s.Route.Servers, ","), "c") || len(s.Route.Servers) == 0 {
		t.Errorf("route %+v, want a non-empty route without c", s.Route)
	}
	metrics := scrapeMetrics(t, nodes["a"].Addr())
	for _, want := range []string{
		`zero502_mesh_server_in_rotation{server="c"} 0`,
		`zero502_mesh_server_state{server="c",state="down"} 1`,
		`zero502_mesh_server_state{server="c",state="up"} 0`,
		`zero502_mesh_server_failing_witnesses{server="c"} 2`,
		`zero502_mesh_route_fallback 0`,
	} {
		if !strings.Contains(metrics, "\n"+want+"\n") {
			t.Errorf("a's /metrics lacks %q:\n%s", want, metrics)
		}
	}
	// The witnesses stay up: b failing c (which says it is healthy) makes b an unreliable
	// witness of a, not a reason against a.
	waitFor(t, nodes, "a", Up, 20*time.Second)
	waitFor(t, nodes, "b", Up, 20*time.Second)

	nodes["c"].SetReachable(true)
	waitFor(t, nodes, "c", Up, 20*time.Second)
}

// scrapeMetrics reads GET /metrics from the node at addr.
func scrapeMetrics(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v\n%s", resp.StatusCode, err, body)
	}
	return string(body)
}

func TestNodeRefusesSignedBulletinsThatSpeakForOthers(t *testing.T) {
	nodes := startMesh(t, "a", "b")
	loop := netip.MustParseAddr("127.0.0.1")
	for _, tc := range []struct {
		name, body, want string
	}{
		{"not JSON", "{", "not JSON"},
		{"a probe by someone else", `{"report":{"server":"b","healthy":true},"probes":[{"prober":"x","target":"a","ok":false}]}`, "only its own probes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bulletinPost{key: testKey, sender: "b", ts: time.Now().UnixNano(), body: tc.body}
			if code, msg := b.send(t, nodes["a"], loop); code != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
				t.Errorf("answer %d %s, want 400 saying %q", code, msg, tc.want)
			}
		})
	}
}

// A bulletin is one round: every probe in it is stamped with the same receipt time, so a second
// probe of the same target would count as another round, and one signed bulletin could carry a
// whole failure streak (two such peers: Down by quorum in one round). Such a bulletin, and one
// probing a server outside the mesh or the sender itself, is refused whole and changes nothing.
func TestNodeRefusesBulletinsWithMoreThanOneProbePerTarget(t *testing.T) {
	nodes := startMesh(t, "a", "b", "c")
	loop := netip.MustParseAddr("127.0.0.1")
	streak := `{"prober":"b","target":"a","ok":false,"err":"x"}`
	for _, tc := range []struct {
		name, probes, want string
	}{
		{"a failure streak in one bulletin", streak + "," + streak + "," + streak, `more than one probe of "a"`},
		{"the same target twice", `{"prober":"b","target":"a","ok":true},` + streak, `more than one probe of "a"`},
		{"a target outside the mesh", `{"prober":"b","target":"x","ok":false}`, `probe of "x", which is not a member of the mesh`},
		{"a probe of itself", `{"prober":"b","target":"b","ok":false}`, "does not probe itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"report":{"server":"b","healthy":true},"probes":[` + tc.probes + `]}`
			b := bulletinPost{key: testKey, sender: "b", ts: time.Now().UnixNano(), body: body}
			if code, msg := b.send(t, nodes["a"], loop); code != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
				t.Errorf("answer %d %s, want 400 saying %q", code, msg, tc.want)
			}
		})
	}
	a := nodes["a"]
	a.eval.mu.Lock()
	defer a.eval.mu.Unlock()
	if s := a.eval.pairs[pair{"b", "a"}]; s != nil && s.fails > 0 {
		t.Errorf("a refused bulletin was recorded: b's streak against a is %d failures", s.fails)
	}
}

func TestNodeValidateNamesFlagValueAndRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		node *Node
		want []string
	}{
		{"no name", &Node{Listen: "127.0.0.1:0", Peers: map[string]string{"b": "127.0.0.1:1"}}, []string{"--name is empty"}},
		{"no peers", &Node{Name: "a", Listen: "127.0.0.1:0"}, []string{"--peers is empty"}},
		{"peer without a port", &Node{Name: "a", Listen: "127.0.0.1:0", Peers: map[string]string{"b": "127.0.0.1"}},
			[]string{"--peers b", `"127.0.0.1"`, "host:port"}},
		{"itself as a peer", &Node{Name: "a", Listen: "127.0.0.1:0", Peers: map[string]string{"a": "127.0.0.1:1"}},
			[]string{`"a" is this server's own --name`}},
		{"timeout not below the round", &Node{Name: "a", Listen: "127.0.0.1:0", Peers: map[string]string{"b": "127.0.0.1:1"},
			ProbeEvery: time.Second, ProbeTimeout: time.Second}, []string{"--probe-timeout 1s", "below --probe-every 1s"}},
		{"probe staleness within a round", &Node{Name: "a", Listen: "127.0.0.1:0", Peers: map[string]string{"b": "127.0.0.1:1"},
			ProbeEvery: 5 * time.Minute, ProbeTimeout: time.Second}, []string{"--probe-stale 3m0s", "longer than --probe-every 5m0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.node.Validate()
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q: %v", w, err)
				}
			}
		})
	}
}

// A key holder cannot build a whole failure streak by sending bulletins back to back: a
// bulletin arriving less than half a round (--probe-every/2) after the last one taken from its
// sender is refused 429 and counts nothing. Here b is a's configured checker, and its failed
// probe of c takes c out of rotation at a after FailStreak rounds, not after FailStreak
// bulletins sent in a burst. a runs on a fake clock: its rounds, and b's bulletins, are spaced
// by advancing it.
func TestABurstOfBulletinsCountsAsOneRound(t *testing.T) {
	peers := map[string]string{}
	for _, name := range []string{"b", "c"} {
		ip := map[string]string{"b": "127.0.0.2", "c": "127.0.0.3"}[name]
		ln, err := net.Listen("tcp", ip+":0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				w.WriteHeader(http.StatusNoContent) // a's bulletins
			}
		})}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { srv.Close() })
		peers[name] = ln.Addr().String()
	}
	clk := fakeClock()
	th := DefaultThresholds()
	a := &Node{Name: "a", Listen: "127.0.0.1:0", Peers: peers, Checkers: []string{"b"}, Key: testKey, Clock: clk,
		ProbeEvery: 10 * time.Second, ProbeTimeout: time.Second, Thresholds: th}
	if err := a.Open(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	from := netip.MustParseAddr("127.0.0.2")
	// b is healthy, sees a, and fails c: a checker's failing vote, once it is a streak.
	body := `{"report":{"server":"b","healthy":true},"probes":[{"prober":"b","target":"a","ok":true},{"prober":"b","target":"c","ok":false,"err":"refused"}]}`
	ts := clk.Now().UnixNano()
	send := func() (int, string) {
		ts++
		return bulletinPost{key: testKey, sender: "b", ts: ts, body: body}.send(t, a, from)
	}
	onC := func() Verdict { return verdictOf(a.Snapshot(), "c") }

	var codes []int
	for range th.FailStreak {
		code, msg := send()
		codes = append(codes, code)
		if code != http.StatusNoContent && (code != http.StatusTooManyRequests || !strings.Contains(msg, "--probe-every")) {
			t.Errorf("a bulletin of the burst: %d %s; want 204, or 429 naming --probe-every", code, msg)
		}
	}
	if want := []int{204, 429, 429}; !slices.Equal(codes, want) {
		t.Errorf("a burst of %d bulletins answered %v; want %v: only the first is taken", th.FailStreak, codes, want)
	}
	if v := onC(); !v.InRotation || v.State == Down {
		t.Fatalf("after a burst of %d bulletins c is %s at a (%s); a burst is one round, not a failure streak", th.FailStreak, v.State, v.Reason)
	}

	for round := 2; round <= th.FailStreak; round++ {
		clk.Advance(a.ProbeEvery)
		if code, msg := send(); code != http.StatusNoContent {
			t.Fatalf("bulletin of round %d, a round after the last: %d %s; want 204", round, code, msg)
		}
		if v := onC(); round < th.FailStreak && !v.InRotation {
			t.Fatalf("after %d rounds c is out of rotation at a (%s); want %d rounds", round, v.Reason, th.FailStreak)
		}
	}
	if v := onC(); v.InRotation || v.BlockedBy != "b" {
		t.Errorf("after %d spaced bulletins c is %s at a, blocked by %q (%s); want out of rotation, blocked by checker b",
			th.FailStreak, v.State, v.BlockedBy, v.Reason)
	}
}
