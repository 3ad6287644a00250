package mesh

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
)

// attacker is a service an attacker runs, counting every connection to it: a mesh node that
// probes it, or a balancer that sends it traffic, shows up here.
type attacker struct {
	ln    net.Listener
	conns atomic.Int64
}

func startAttacker(t *testing.T, ip netip.Addr) *attacker {
	t.Helper()
	ln, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	a := &attacker{ln: ln}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "attacker\n") }),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				a.conns.Add(1)
			}
		}}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return a
}

func (a *attacker) addr() string { return a.ln.Addr().String() }

// forgedBulletin is b's report as an attacker would write it: b is unhealthy, its service is the
// attacker's, and b fails to reach every other server.
func forgedBulletin(t *testing.T, server string, healthy bool, service string, targets ...string) string {
	t.Helper()
	b := Bulletin{Report: Report{Server: server, Healthy: healthy, Detail: "forged", Service: service, Checker: true}}
	for _, target := range targets {
		b.Probes = append(b.Probes, Probe{Prober: server, Target: target, OK: false, Err: "forged"})
	}
	body, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// A forged POST /mesh/bulletin, whatever it gets wrong, is refused with 401 or 403 and a log
// line naming the sender and the reason, and changes nothing: neither a's verdicts and route
// nor the balancer's backends, and nobody probes or serves the attacker's address. A genuine
// bulletin (signed, from b's address, fresh) is still taken, but what it claims as b's service
// is ignored: b's service is the one a is configured with.
func TestForgedBulletinsChangeNeitherTheRouteNorTheBalancer(t *testing.T) {
	m := startServiceMesh(t, nil, "a", "b", "c")
	lbBackends := startLB(t, m, "a", "b", "c")
	services := []string{m.services["a"].Addr().String(), m.services["b"].Addr().String(), m.services["c"].Addr().String()}
	poll.Until(t, 20*time.Second, "all three in the balancer's rotation", func() bool {
		bs := lbBackends()
		for _, s := range services {
			if !bs[s].InRotation || bs[s].AdminDrained {
				return false
			}
		}
		return true
	})
	evil := startAttacker(t, netip.MustParseAddr("127.0.0.66"))
	evilURL := "http://" + evil.addr() + "/"
	a := m.nodes["a"]
	forged := forgedBulletin(t, "b", false, evilURL, "a", "c")
	now := func() int64 { return time.Now().UnixNano() }
	otherKey := []byte("not-the-mesh-key-0123456789abcdef")

	// b's own node sends too: a bulletin arriving within half a round of one of its is refused
	// 429 (one bulletin a round), so this one is sent again until it is taken.
	var genuine bulletinPost
	poll.UntilNil(t, 10*time.Second, "a genuine bulletin from b taken", func() error {
		genuine = bulletinPost{key: testKey, sender: "b", ts: now(), body: forgedBulletin(t, "b", true, evilURL)}
		if code, msg := genuine.send(t, a, m.ips["b"]); code != http.StatusNoContent {
			return fmt.Errorf("answer %d %s, want 204", code, msg)
		}
		return nil
	})

	for _, tc := range []struct {
		name   string
		post   bulletinPost
		from   netip.Addr
		status int
		says   string
	}{
		{"no signature", bulletinPost{sender: "b", ts: now(), body: forged}, m.ips["b"], http.StatusUnauthorized, "signs every bulletin"},
		{"no sender", bulletinPost{key: testKey, ts: now(), body: forged}, m.ips["b"], http.StatusUnauthorized, "names its sender"},
		{"wrong key", bulletinPost{key: otherKey, sender: "b", ts: now(), body: forged}, m.ips["b"], http.StatusUnauthorized, "bad signature"},
		{"replayed", genuine, m.ips["b"], http.StatusUnauthorized, "replayed"},
		{"signed for another receiver", bulletinPost{key: testKey, sender: "b", receiver: "c", ts: now(), body: forged}, m.ips["b"],
			http.StatusUnauthorized, "bad signature"},
		{"body changed after signing", bulletinPost{key: testKey, sender: "b", ts: now(), body: forged, signed: genuine.body}, m.ips["b"],
			http.StatusUnauthorized, "bad signature"},
		{"stale timestamp", bulletinPost{key: testKey, sender: "b", ts: time.Now().Add(-2 * DefaultBulletinWindow).UnixNano(), body: forged},
			m.ips["b"], http.StatusUnauthorized, "stale"},
		{"timestamp from the future", bulletinPost{key: testKey, sender: "b", ts: time.Now().Add(2 * DefaultBulletinWindow).UnixNano(), body: forged},
			m.ips["b"], http.StatusUnauthorized, "stale"},
		{"sender not a configured peer", bulletinPost{key: testKey, sender: "z", ts: now(), body: forgedBulletin(t, "z", false, evilURL, "a")},
			netip.MustParseAddr("127.0.0.66"), http.StatusForbidden, "not a configured peer"},
		{"sender is the receiver", bulletinPost{key: testKey, sender: "a", ts: now(), body: forgedBulletin(t, "a", false, evilURL)},
			m.ips["b"], http.StatusForbidden, "own name"},
		{"b's id from another address", bulletinPost{key: testKey, sender: "b", ts: now(), body: forged}, netip.MustParseAddr("127.0.0.66"),
			http.StatusForbidden, "not from its configured address"},
		{"b's id from c's address", bulletinPost{key: testKey, sender: "b", ts: now(), body: forged}, m.ips["c"],
			http.StatusForbidden, "not from its configured address"},
		{"c's bulletin speaking for b", bulletinPost{key: testKey, sender: "c", ts: now(), body: forged}, m.ips["c"],
			http.StatusForbidden, `speaks for "b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := tc.post.send(t, a, tc.from)
			if code != tc.status || !strings.Contains(msg, tc.says) {
				t.Errorf("answer %d %q; want %d saying %q", code, msg, tc.status, tc.says)
			}
			sender := tc.post.sender
			poll.Until(t, 5*time.Second, "a's log line naming sender "+sender+" and the reason", func() bool {
				for line := range strings.Lines(m.logs["a"].String()) {
					var l struct{ Msg, Sender, Reason string }
					if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "bulletin refused" && l.Sender == sender && strings.Contains(l.Reason, tc.says) {
						return true
					}
				}
				return false
			})
		})
	}

	m.settle() // rounds in which a forgery taken would show
	s, err := FetchSnapshot(a.Addr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if v := verdictOf(s, "b"); v.State != Up || v.Checker || v.Service != "http://"+services[1]+"/" {
		t.Errorf("a's verdict on b %+v; want up, no checker, the configured service", v)
	}
	if rv := route(t, a); !slices.Equal(slices.Sorted(slices.Values(rv.Addresses)), slices.Sorted(slices.Values(services))) {
		t.Errorf("a's route %v; want exactly the three configured services", rv.Addresses)
	}
	bs := lbBackends()
	if _, ok := bs[evil.addr()]; ok {
		t.Errorf("the attacker's address is a backend of the balancer: %+v", bs)
	}
	for _, addr := range services {
		if b := bs[addr]; !b.InRotation || b.AdminDrained {
			t.Errorf("backend %s %+v: a forgery moved it out of rotation", addr, b)
		}
	}
	if n := evil.conns.Load(); n != 0 {
		t.Errorf("the attacker's service got %d connections: probed by the mesh or served by the balancer", n)
	}
	if got := m.recv.List(); len(got) != 0 {
		t.Errorf("alerts %v: a forgery made the mesh alert", got)
	}

	// A genuine bulletin still counts: b saying it is unhealthy makes it unavailable at a
	// (until b's own next bulletin says otherwise).
	poll.UntilNil(t, 10*time.Second, "a genuine bulletin taken", func() error {
		p := bulletinPost{key: testKey, sender: "b", ts: now(), body: forgedBulletin(t, "b", false, "")}
		if code, msg := p.send(t, a, m.ips["b"]); code != http.StatusNoContent {
			return fmt.Errorf("answer %d %s", code, msg)
		}
		s, err := FetchSnapshot(a.Addr(), 2*time.Second)
		if err != nil {
			return err
		}
		if v := verdictOf(s, "b"); !v.Has(Unavailable) || !strings.Contains(v.Reason, "forged") {
			return errors.New("b's verdict at a: " + v.Reason)
		}
		return nil
	})
}

// A captured bulletin is taken once. The receiver's memory of the last timestamps is lost when
// it restarts, so a replay to the restarted process is refused by the start floor: a bulletin
// stamped before the receiver started is not taken, whatever it remembers.
func TestACapturedBulletinIsRefusedAfterTheReceiverRestarts(t *testing.T) {
	newNode := func() *Node {
		n := &Node{Name: "a", Listen: "127.0.0.1:0", Key: testKey,
			Peers: map[string]string{"b": "127.0.0.2:7946", "c": "127.0.0.3:7946"}}
		if err := n.Open(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.ln.Close() })
		return n
	}
	body := []byte(forgedBulletin(t, "b", false, "", "c"))
	var ts int64
	post := func(n *Node) (int, string) {
		req := httptest.NewRequest(http.MethodPost, "/mesh/bulletin", bytes.NewReader(body))
		req.RemoteAddr = "127.0.0.2:40000"
		signRequest(req, testKey, "b", "a", ts, body)
		w := httptest.NewRecorder()
		n.handler().ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	first := newNode()
	ts = time.Now().UnixNano() // b's bulletin, sent to the running receiver and captured on the way
	if code, msg := post(first); code != http.StatusNoContent {
		t.Fatalf("the genuine bulletin: %d %s, want 204", code, msg)
	}
	if code, msg := post(first); code != http.StatusUnauthorized || !strings.Contains(msg, "replayed") {
		t.Fatalf("replayed to the same process: %d %s, want 401 replayed", code, msg)
	}
	restarted := newNode()
	if code, msg := post(restarted); code != http.StatusUnauthorized || !strings.Contains(msg, "before this server started") {
		t.Fatalf("the captured bulletin replayed after the receiver restarted: %d %s; want 401 naming the start", code, msg)
	}
	// A bulletin b stamps after the restart is taken as usual.
	ts = time.Now().UnixNano()
	if code, msg := post(restarted); code != http.StatusNoContent {
		t.Fatalf("a fresh bulletin after the restart: %d %s, want 204", code, msg)
	}
}

// Without a key a node starts only on loopback: off loopback anyone who reaches it could forge
// bulletins. A key too short is refused.
func TestNodeWithoutAKeyStartsOnlyOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		name string
		node *Node
		want []string // "" : accepted
	}{
		{"loopback, no key", &Node{Name: "a", Listen: "127.0.0.1:0", Peers: map[string]string{"b": "127.0.0.2:7946"}}, nil},
		{"listen off loopback", &Node{Name: "a", Listen: "0.0.0.0:7946", Peers: map[string]string{"b": "127.0.0.2:7946"}},
			[]string{"no mesh key", "--listen 0.0.0.0:7946", "--key-file", "ZERO502_MESH_KEY"}},
		{"a peer off loopback", &Node{Name: "a", Listen: "127.0.0.1:0", Peers: map[string]string{"b": "10.0.0.6:7946"}},
			[]string{"no mesh key", "--peers b=10.0.0.6:7946"}},
		{"off loopback with a key", &Node{Name: "a", Listen: "0.0.0.0:7946", Peers: map[string]string{"b": "10.0.0.6:7946"}, Key: testKey}, nil},
		{"a short key", &Node{Name: "a", Listen: "0.0.0.0:7946", Peers: map[string]string{"b": "10.0.0.6:7946"}, Key: []byte("short")},
			[]string{"mesh key: 5 bytes", "16 or more"}},
		{"a service for a stranger", &Node{Name: "a", Listen: "127.0.0.1:0", Peers: map[string]string{"b": "127.0.0.2:7946"},
			PeerServices: map[string]Service{"z": {URL: "tcp://127.0.0.9:443"}}}, []string{"--peer-service z=tcp://127.0.0.9:443", "not in --peers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.node.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
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
