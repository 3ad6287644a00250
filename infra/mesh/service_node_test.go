package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/alert"
	"github.com/zero502/zero502/infra/backoff"
	"github.com/zero502/zero502/infra/lb"
	"github.com/zero502/zero502/internal/testrig/alerttest"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
)

// blockable is a server's real service: an HTTP listener that, like a firewall on the path,
// closes connections from blocked source addresses at once.
type blockable struct {
	net.Listener
	mu      sync.Mutex
	blocked map[netip.Addr]bool // nil key set: nothing blocked
	all     bool                // block every source but own
	own     netip.Addr
}

func (b *blockable) Accept() (net.Conn, error) {
	for {
		c, err := b.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr()
		b.mu.Lock()
		drop := b.blocked[src] || (b.all && src != b.own)
		b.mu.Unlock()
		if !drop {
			return c, nil
		}
		c.Close()
	}
}

func (b *blockable) block(all bool, from ...netip.Addr) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.all, b.blocked = all, map[netip.Addr]bool{}
	for _, a := range from {
		b.blocked[a] = true
	}
}

// serviceMesh is one Node per name, name i on 127.0.0.(i+1), each with a real service listener
// on its own address, probes leaving from its own address, and alerts to one receiver.
type serviceMesh struct {
	nodes    map[string]*Node
	services map[string]*blockable
	ips      map[string]netip.Addr
	recv     *alerttest.Receiver
	logs     map[string]*syncbuffer.Buffer // each node's warnings and errors, JSON lines
}

// listing is every node's --checkers: the same names on every server.
func listing(checkers ...string) func(node string) []string {
	return func(string) []string { return checkers }
}

// startServiceMesh starts the mesh of names, each node with checkers(name) as its --checkers
// (checkers nil: none anywhere).
func startServiceMesh(t *testing.T, checkers func(node string) []string, names ...string) *serviceMesh {
	t.Helper()
	m := &serviceMesh{nodes: map[string]*Node{}, services: map[string]*blockable{}, ips: map[string]netip.Addr{}, recv: &alerttest.Receiver{},
		logs: map[string]*syncbuffer.Buffer{}}
	hook := httptest.NewServer(m.recv)
	t.Cleanup(hook.Close)
	lns := map[string]net.Listener{}
	for i, name := range names {
		ip := netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 1)})
		m.ips[name] = ip
		ln, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
		if err != nil {
			t.Fatal(err)
		}
		lns[name] = ln
		sln, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
		if err != nil {
			t.Fatal(err)
		}
		svc := &blockable{Listener: sln, own: ip}
		m.services[name] = svc
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "vpn ok\n") })}
		go func() { _ = srv.Serve(svc) }()
		t.Cleanup(func() { srv.Close() })
	}
	th := DefaultThresholds()
	th.FailStreak, th.ProbeStaleAfter, th.ReportStaleAfter = 2, 5*time.Second, 5*time.Second
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	svcs := map[string]Service{}
	for _, name := range names {
		svc, err := ParseService("service", "http://"+m.services[name].Addr().String()+"/")
		if err != nil {
			t.Fatal(err)
		}
		svcs[name] = svc
	}
	for _, name := range names {
		m.logs[name] = &syncbuffer.Buffer{}
	}
	for _, name := range names {
		peers, peerServices := map[string]string{}, map[string]Service{}
		for _, o := range names {
			if o != name {
				peers[o] = lns[o].Addr().String()
				peerServices[o] = svcs[o]
			}
		}
		var listed []string
		if checkers != nil {
			listed = checkers(name)
		}
		n := &Node{Name: name, Listen: lns[name].Addr().String(), Listener: lns[name], Peers: peers, Checkers: listed,
			Service: svcs[name], PeerServices: peerServices, Key: testKey, CheckCommand: "true", Source: m.ips[name],
			ProbeEvery: 300 * time.Millisecond, ProbeTimeout: 250 * time.Millisecond, Thresholds: th,
			Alerts: &alert.Sender{URL: hook.URL, Backoff: backoff.Backoff{Base: time.Millisecond}},
			Logger: slog.New(slog.NewJSONHandler(m.logs[name], &slog.HandlerOptions{Level: slog.LevelWarn}))}
		if err := n.Open(); err != nil {
			t.Fatal(err)
		}
		m.nodes[name] = n
		wg.Go(func() { _ = n.Serve(ctx) })
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, name := range names {
		m.wait(t, name+" up everywhere", func(s Snapshot) bool { return verdictOf(s, name).State == Up })
	}
	return m
}

// wait polls every node's view over HTTP until ok holds in all of them.
func (m *serviceMesh) wait(t *testing.T, what string, ok func(Snapshot) bool) {
	t.Helper()
	poll.UntilNil(t, 20*time.Second, "not every view shows "+what, func() error {
		var last []string
		for name, n := range m.nodes {
			s, err := FetchSnapshot(n.Addr(), 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if !ok(s) {
				var b strings.Builder
				_ = s.WriteText(&b)
				last = append(last, name+"'s view:\n"+b.String())
			}
		}
		if len(last) > 0 {
			return errors.New("\n" + strings.Join(last, "\n"))
		}
		return nil
	})
}

func verdictOf(s Snapshot, server string) Verdict {
	for _, v := range s.Verdicts {
		if v.Server == server {
			return v
		}
	}
	return Verdict{}
}

func route(t *testing.T, n *Node) RouteView {
	t.Helper()
	rv, err := fetchRoute(http.DefaultClient, "http://"+n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

// settle waits a few more rounds, so an alert that should not come has had time to. It is the
// window a negative assertion needs, not a condition waited for.
func (m *serviceMesh) settle() { time.Sleep(1500 * time.Millisecond) }

// alerted polls the receiver until it holds want (in order), failing after 20 s.
func (m *serviceMesh) alerted(t *testing.T, want ...string) {
	t.Helper()
	poll.UntilNil(t, 20*time.Second, "the receiver's alerts", func() error {
		if got := m.recv.List(); !slices.Equal(got, want) {
			return fmt.Errorf("alerts %v; want %v", got, want)
		}
		return nil
	})
}

// startLB runs the in-house balancer over the mesh's services and syncs it from a's route
// through its admin API; it returns a function reading the balancer's backends.
func startLB(t *testing.T, m *serviceMesh, names ...string) func() map[string]lbBackend {
	t.Helper()
	var backends []string
	for _, n := range names {
		backends = append(backends, m.services[n].Addr().String())
	}
	set := lb.LabSettings("127.0.0.1:0", backends)
	set.Admin = "127.0.0.1:0"
	srv, err := lb.New(set, lb.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Run(ctx) })
	syncer := &LBSync{Mesh: "http://" + m.nodes["a"].Addr(), Admin: "http://" + srv.AdminAddr(), Every: 100 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)}
	wg.Go(func() { syncer.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return func() map[string]lbBackend {
		var got struct {
			Backends []lbBackend `json:"backends"`
		}
		if err := syncer.admin(context.Background(), http.MethodGet, "/admin/backends", &got); err != nil {
			t.Fatal(err)
		}
		out := map[string]lbBackend{}
		for _, b := range got.Backends {
			out[b.Address] = b
		}
		return out
	}
}

func TestAServerWhoseServicePortAloneIsBlockedIsFoundAlertedOnceTakenOutAndHealed(t *testing.T) {
	m := startServiceMesh(t, nil, "a", "b", "c")
	c := m.services["c"]
	lbBackends := startLB(t, m, "a", "b", "c")
	cAddr := c.Addr().String()
	poll.Until(t, 20*time.Second, "all three in the balancer's rotation", func() bool {
		bs := lbBackends()
		return len(bs) == 3 && bs[cAddr].InRotation && !bs[cAddr].AdminDrained
	})
	c.block(true) // c's service refuses everyone but c itself; its mesh port stays up

	m.wait(t, "c unreachable", func(s Snapshot) bool {
		v := verdictOf(s, "c")
		return v.State == Down && v.Has(Unreachable) && !v.Has(Unavailable)
	})
	rv := route(t, m.nodes["a"])
	if slices.Contains(rv.Addresses, c.Addr().String()) || len(rv.Addresses) != 2 {
		t.Errorf("route %+v; want a and b's services without c's", rv)
	}
	for _, e := range rv.Servers {
		if e.Server == "c" && (e.In || !strings.Contains(e.Why, "unreachable")) {
			t.Errorf("route entry for c %+v; want out, saying why", e)
		}
	}
	m.alerted(t, "c unreachable")
	poll.Until(t, 20*time.Second, "c drained in the balancer by the mesh", func() bool { return lbBackends()[cAddr].AdminDrained })
	for addr, b := range lbBackends() {
		if addr != cAddr && (b.AdminDrained || !b.InRotation) {
			t.Errorf("balancer backend %s %+v; only c may leave the rotation", addr, b)
		}
	}
	m.settle()
	if got := m.recv.List(); !slices.Equal(got, []string{"c unreachable"}) {
		t.Errorf("alerts %v; want exactly one: c unreachable (a standing verdict is not alerted again)", got)
	}

	c.block(false)
	m.wait(t, "c up again", func(s Snapshot) bool { return verdictOf(s, "c").State == Up })
	m.alerted(t, "c unreachable", "c recovered")
	m.settle()
	if got := m.recv.List(); !slices.Equal(got, []string{"c unreachable", "c recovered"}) {
		t.Errorf("alerts %v; want c unreachable then c recovered, once each", got)
	}
	if rv := route(t, m.nodes["b"]); len(rv.Addresses) != 3 {
		t.Errorf("route %+v; want all three back", rv)
	}
	poll.Until(t, 20*time.Second, "c back in the balancer's rotation", func() bool {
		b := lbBackends()[cAddr]
		return !b.AdminDrained && b.InRotation
	})

	// Metrics travel with the reports, with their age.
	s, err := FetchSnapshot(m.nodes["a"].Addr(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if v := verdictOf(s, "b"); v.Metrics == nil || v.Metrics.ServiceLatency <= 0 || v.MetricsStale {
		t.Errorf("b's metrics %+v (stale %v); want fresh metrics with the service check's latency", v.Metrics, v.MetricsStale)
	}
	resp, err := http.Get("http://" + m.nodes["a"].Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`zero502_mesh_metrics_age_seconds{observer="a",server="c"}`, `zero502_mesh_in_rotation{observer="a",server="c"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
}

func TestACheckerThatCannotReachAServerBlocksItAndSuggestsANewIP(t *testing.T) {
	m := startServiceMesh(t, listing("a"), "a", "b", "c", "d")
	m.services["b"].block(false, m.ips["a"]) // only the checker's probes fail

	m.wait(t, "b blocked by checker a", func(s Snapshot) bool {
		v := verdictOf(s, "b")
		return v.State == Down && v.BlockedBy == "a"
	})
	m.alerted(t, "b "+alertBlocked)
	m.settle()
	a, ok := m.recv.Find("b", alertBlocked)
	if !ok || !strings.Contains(a.Suggestion, "change b's IP") {
		t.Errorf("alerts %v; want one 'blocked' alert for b suggesting a new IP, got %+v", m.recv.List(), a)
	}
	if got := m.recv.List(); len(got) != 1 {
		t.Errorf("alerts %v; want exactly one", got)
	}
	if rv := route(t, m.nodes["c"]); slices.Contains(rv.Addresses, m.services["b"].Addr().String()) {
		t.Errorf("route %+v still hands out b", rv)
	}
}

// A peer whose bulletins claim the checker role (here c, which lists itself in its own
// --checkers, as any key holder could) is not believed by servers that list no checkers: in a
// mesh of three, c failing b alone only marks b's entry point on a and b, it stays in rotation,
// nobody is alerted, and the claim is logged once.
func TestAPeerClaimingTheCheckerRoleCannotTakeAServerDownAlone(t *testing.T) {
	m := startServiceMesh(t, func(node string) []string {
		if node == "c" {
			return []string{"c"}
		}
		return nil
	}, "a", "b", "c")
	m.services["b"].block(false, m.ips["c"]) // only c's probes fail

	m.wait(t, "c's failing vote against b", func(s Snapshot) bool {
		v := verdictOf(s, "b")
		if s.Server == "c" { // c believes its own configuration
			return v.State == Down && v.BlockedBy == "c"
		}
		i := slices.IndexFunc(v.Votes, func(x Vote) bool { return x.Witness == "c" })
		return i >= 0 && v.Votes[i].Failing
	})
	m.settle()
	for _, name := range []string{"a", "b"} {
		s, err := FetchSnapshot(m.nodes[name].Addr(), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if v := verdictOf(s, "b"); v.State != Up || !v.InRotation || v.BlockedBy != "" || !v.Has(Marked) {
			t.Errorf("%s's verdict on b: %s, in rotation %v, blocked by %q, reason %q; want up and marked: c's claim to be a checker is not believed",
				name, v.State, v.InRotation, v.BlockedBy, v.Reason)
		}
		if v := verdictOf(s, "c"); v.Checker {
			t.Errorf("%s's verdict on c says checker; %s lists no checkers", name, name)
		}
		if rv := route(t, m.nodes[name]); !slices.Contains(rv.Addresses, m.services["b"].Addr().String()) {
			t.Errorf("%s's route %v lacks b", name, rv.Addresses)
		}
		claims := 0
		for line := range strings.Lines(m.logs[name].String()) {
			var l struct {
				Msg, Sender string
				Claimed     bool
			}
			if json.Unmarshal([]byte(line), &l) == nil && strings.HasPrefix(l.Msg, "bulletin's checker role ignored") && l.Sender == "c" && l.Claimed {
				claims++
			}
		}
		if claims != 1 {
			t.Errorf("%s logged c's claim %d times, want once:\n%s", name, claims, m.logs[name])
		}
	}
	if got := m.recv.List(); len(got) != 0 {
		t.Errorf("alerts %v; c's claim blocks nobody", got)
	}
}

func TestAnUnreliableWitnessIsIgnored(t *testing.T) {
	m := startServiceMesh(t, nil, "a", "b", "c", "d")
	for _, name := range []string{"a", "b", "c"} {
		m.services[name].block(false, m.ips["d"]) // d cannot see anyone: the problem is d's
	}
	m.wait(t, "d's failing votes ignored", func(s Snapshot) bool {
		for _, name := range []string{"a", "b", "c"} {
			v := verdictOf(s, name)
			i := slices.IndexFunc(v.Votes, func(x Vote) bool { return x.Witness == "d" })
			if i < 0 || !v.Votes[i].Failing || v.Votes[i].Ignored == "" || !v.InRotation {
				return false
			}
		}
		return true
	})
	m.settle()
	for _, name := range []string{"a", "b", "c"} {
		rv := route(t, m.nodes[name])
		for _, sv := range rv.Servers {
			if sv.Server != "d" && !sv.In {
				t.Errorf("%s's route has %s out of rotation: %+v; want d's votes against it ignored", name, sv.Server, rv)
			}
		}
	}
	// d itself is in rotation too, by its own check ("true" within ProbeTimeout, which one
	// report in CI missed: "exec: canceling Cmd"), so in every route once it reports healthy.
	poll.UntilNil(t, 20*time.Second, "d out of rotation", func() error {
		for _, name := range []string{"a", "b", "c"} {
			if rv := route(t, m.nodes[name]); len(rv.Addresses) != 4 {
				return fmt.Errorf("%s's route %+v; want all four in rotation", name, rv)
			}
		}
		return nil
	})
	if got := m.recv.List(); len(got) != 0 {
		t.Errorf("alerts %v; an unreliable witness alerts nobody", got)
	}
}
