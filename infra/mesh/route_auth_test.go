package mesh

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
)

// fetchRoute reads a node's GET /route without a key (tests on loopback, reading what a node
// says).
func fetchRoute(client *http.Client, base string) (RouteView, error) {
	return readRoute(context.Background(), client, base, nil)
}

// routeAnswer is one GET /route answer an attacker's server writes: the body, and the
// signature header for the request's challenge ("" : none).
type routeAnswer func(challenge string) (body []byte, signature string)

// fakeMesh is an HTTP server answering GET /route as answer says, recording the challenges of
// the requests it got.
type fakeMesh struct {
	*httptest.Server
	mu         sync.Mutex
	challenges []string
}

func startFakeMesh(t *testing.T, answer routeAnswer) *fakeMesh {
	t.Helper()
	f := &fakeMesh{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ch := r.Header.Get(headerChallenge)
		f.mu.Lock()
		f.challenges = append(f.challenges, ch)
		f.mu.Unlock()
		body, sig := answer(ch)
		if sig != "" {
			w.Header().Set(headerSignature, sig)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeMesh) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.challenges)
}

// backendStates is the balancer's backends as address → drained, for comparing before/after.
func backendStates(t *testing.T, s *LBSync) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for a, b := range balancerBackends(t, s) {
		out[a] = b.AdminDrained
	}
	return out
}

// A route answered by anyone without the mesh key — unsigned, signed with another key, a
// garbage signature, or a genuine signature over another body — is refused by an lb-sync that
// has the key: Once fails saying what was wrong and to give both the same --key-file, and the
// balancer is not touched (the attacker's address is not added, the balancer's own backend
// the forged route rules out is not drained). Every request carries a fresh 32-hex challenge.
func TestLBSyncWithAKeyRefusesAnUnsignedOrWronglySignedRoute(t *testing.T) {
	evil := startAttacker(t, netip.MustParseAddr("127.0.0.66"))
	own := httpBackend(t)
	forged := RouteView{Ready: true, Addresses: []string{evil.addr()}, Servers: []routeEntry{
		{Server: "evil", Address: evil.addr(), In: true}, {Server: "a", Address: own, Why: "forged: ruled out"}}}
	body, err := json.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	genuine, err := json.Marshal(RouteView{Ready: true, Addresses: []string{own}, Servers: []routeEntry{{Server: "a", Address: own, In: true}}})
	if err != nil {
		t.Fatal(err)
	}
	otherKey := []byte("not-the-mesh-key-0123456789abcdef")
	admin := startBalancer(t, own)
	hexChallenge := regexp.MustCompile(`^[0-9a-f]{32}$`)

	for _, tc := range []struct {
		name   string
		answer routeAnswer
		says   string
	}{
		{"unsigned", func(string) ([]byte, string) { return body, "" }, "not signed"},
		{"signed with another key", func(ch string) ([]byte, string) { return body, signRoute(otherKey, ch, body) }, "bad signature"},
		{"garbage signature", func(string) ([]byte, string) { return body, signatureScheme + strings.Repeat("0", 64) }, "bad signature"},
		{"not a v1 signature", func(ch string) ([]byte, string) {
			return body, strings.TrimPrefix(signRoute(testKey, ch, body), signatureScheme)
		}, "not signed"},
		{"genuine signature, body swapped on the path", func(ch string) ([]byte, string) { return body, signRoute(testKey, ch, genuine) }, "bad signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := startFakeMesh(t, tc.answer)
			s := &LBSync{Mesh: fake.URL, Admin: admin, Key: testKey, Every: time.Second}
			before := backendStates(t, s)
			for range 2 {
				changes, err := s.Once(context.Background())
				if err == nil || len(changes) != 0 {
					t.Fatalf("Once: %q, %v; want an error and no change", changes, err)
				}
				for _, w := range []string{tc.says, "--key-file", fake.URL} {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("the error does not say %q: %v", w, err)
					}
				}
			}
			if after := backendStates(t, s); !maps.Equal(after, before) {
				t.Errorf("balancer %v, was %v: a forged route changed it", after, before)
			}
			ch := fake.seen()
			if len(ch) != 2 || ch[0] == ch[1] || !hexChallenge.MatchString(ch[0]) || !hexChallenge.MatchString(ch[1]) {
				t.Errorf("challenges %q; want a fresh 32-hex-digit one per request", ch)
			}
		})
	}
	if n := evil.conns.Load(); n != 0 {
		t.Errorf("the attacker's address got %d connections: the balancer took it", n)
	}
}

// What answers at lb-sync's --from with a redirect hands the challenge to another server that
// holds the key (another node of this mesh, or of another mesh sharing it), whose signed route
// is not the configured node's: lb-sync follows no redirect, and the balancer is not touched.
func TestLBSyncFollowsNoRedirectToAnotherSigner(t *testing.T) {
	evil := startAttacker(t, netip.MustParseAddr("127.0.0.67"))
	own := httpBackend(t)
	body, err := json.Marshal(RouteView{Ready: true, Addresses: []string{evil.addr()}, Servers: []routeEntry{
		{Server: "evil", Address: evil.addr(), In: true}, {Server: "a", Address: own, Why: "elsewhere: ruled out"}}})
	if err != nil {
		t.Fatal(err)
	}
	signer := startFakeMesh(t, func(ch string) ([]byte, string) { return body, signRoute(testKey, ch, body) })
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, signer.URL+"/route", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	admin := startBalancer(t, own)
	s := &LBSync{Mesh: redirect.URL, Admin: admin, Key: testKey, Every: time.Second}
	before := backendStates(t, s)
	changes, err := s.Once(context.Background())
	if err == nil || len(changes) != 0 || !strings.Contains(err.Error(), "307") {
		t.Fatalf("Once through a redirect: %q, %v; want an error naming the 307 and no change", changes, err)
	}
	if after := backendStates(t, s); !maps.Equal(after, before) {
		t.Errorf("balancer %v, was %v: a redirected route changed it", after, before)
	}
	if n := len(signer.seen()); n != 0 {
		t.Errorf("the other signer got %d challenges: lb-sync followed the redirect", n)
	}
}

// readyRoute waits until n's route is ready with every service of m in it.
func readyRoute(t *testing.T, m *serviceMesh, n *Node) {
	t.Helper()
	poll.UntilNil(t, 20*time.Second, "a ready route with every service", func() error {
		rv, err := fetchRoute(http.DefaultClient, "http://"+n.Addr())
		if err != nil {
			return err
		}
		if !rv.Ready || len(rv.Addresses) != len(m.services) {
			return fmt.Errorf("route %+v", rv)
		}
		return nil
	})
}

// captureRoute is what someone on the path records: a genuine GET /route answer of n, signed
// for challenge.
func captureRoute(t *testing.T, n *Node, challenge string) (body []byte, signature string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+n.Addr()+"/route", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(headerChallenge, challenge)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if body, err = io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	return body, resp.Header.Get(headerSignature)
}

// A genuine, signed route captured for one challenge and served again for another (by whoever
// holds the node's port after a restart, or someone on the path) is refused: nothing of it
// reaches the balancer. The captured answer is valid for its own challenge, so only the
// challenge refuses it.
func TestLBSyncRefusesASignedRouteReplayedForAnotherChallenge(t *testing.T) {
	m := startServiceMesh(t, nil, "a", "b")
	a := m.nodes["a"]
	readyRoute(t, m, a)
	captured := newChallenge()
	body, sig := captureRoute(t, a, captured)
	if signed, valid := signatureValid(sig, signRoute(testKey, captured, body)); !signed || !valid {
		t.Fatalf("the node's answer for challenge %s: signature %q does not verify", captured, sig)
	}
	var rv RouteView
	if err := json.Unmarshal(body, &rv); err != nil || !rv.Ready || len(rv.Addresses) != 2 {
		t.Fatalf("captured route %s (%v); want a ready one with both services", body, err)
	}

	replay := startFakeMesh(t, func(string) ([]byte, string) { return body, sig })
	own := httpBackend(t)
	s := &LBSync{Mesh: replay.URL, Admin: startBalancer(t, own), Key: testKey, Every: time.Second}
	before := backendStates(t, s)
	for range 2 {
		changes, err := s.Once(context.Background())
		if err == nil || len(changes) != 0 || !strings.Contains(err.Error(), "bad signature") || !strings.Contains(err.Error(), "replayed") {
			t.Fatalf("a replayed route: %q, %v; want a bad signature error (replayed) and no change", changes, err)
		}
	}
	if after := backendStates(t, s); !maps.Equal(after, before) {
		t.Errorf("balancer %v, was %v: a replayed route changed it", after, before)
	}
	if ch := replay.seen(); slices.Contains(ch, captured) {
		t.Errorf("lb-sync sent the captured challenge %s again: %q", captured, ch)
	}
}

// A real node with the key and an lb-sync with the same key still sync: the node signs its
// answer for lb-sync's challenge and the services are added. An lb-sync with another key takes
// nothing from the same node.
func TestLBSyncWithTheMeshKeySyncsFromARealNode(t *testing.T) {
	m := startServiceMesh(t, nil, "a", "b")
	a := m.nodes["a"]
	readyRoute(t, m, a)
	own := httpBackend(t)
	admin := startBalancer(t, own)

	wrong := &LBSync{Mesh: "http://" + a.Addr(), Admin: admin, Key: []byte("not-the-mesh-key-0123456789abcdef"), Every: time.Second}
	if changes, err := wrong.Once(context.Background()); err == nil || len(changes) != 0 || !strings.Contains(err.Error(), "bad signature") {
		t.Fatalf("lb-sync with another key: %q, %v; want a bad signature error and no change", changes, err)
	}

	s := &LBSync{Mesh: "http://" + a.Addr(), Admin: admin, Key: testKey, Every: time.Second}
	services := []string{m.services["a"].Addr().String(), m.services["b"].Addr().String()}
	changes, err := s.Once(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(changes)
	want := []string{"add " + min(services[0], services[1]), "add " + max(services[0], services[1])}
	if !slices.Equal(changes, want) {
		t.Errorf("changes %q; want %q", changes, want)
	}
	bs := balancerBackends(t, s)
	for _, addr := range append(services, own) {
		if b, ok := bs[addr]; !ok || b.AdminDrained {
			t.Errorf("backend %s: %+v (present %v); want in the balancer, not drained", addr, b, ok)
		}
	}
}

// Without a key lb-sync runs only against a mesh URL on loopback, like a node without a key;
// off loopback it is refused before anything is read, naming the flag, the value and the rule.
func TestLBSyncWithoutAKeyRunsOnlyOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *LBSync
		want []string // nil: accepted
	}{
		{"loopback", &LBSync{Mesh: "http://127.0.0.1:7001"}, nil},
		{"loopback 127.0.0.3", &LBSync{Mesh: "http://127.0.0.3:7001/"}, nil},
		{"localhost", &LBSync{Mesh: "http://localhost:7001"}, nil},
		{"IPv6 loopback", &LBSync{Mesh: "http://[::1]:7001"}, nil},
		{"loopback without a port", &LBSync{Mesh: "http://127.0.0.1"}, nil},
		{"off loopback", &LBSync{Mesh: "http://10.0.0.5:7946"},
			[]string{"no mesh key", "--from http://10.0.0.5:7946", "not on loopback", "--key-file", "ZERO502_MESH_KEY"}},
		{"a name off loopback", &LBSync{Mesh: "http://mesh.example.com:7946"}, []string{"no mesh key", "--from http://mesh.example.com:7946"}},
		{"off loopback with a key", &LBSync{Mesh: "http://10.0.0.5:7946", Key: testKey}, nil},
		{"a short key", &LBSync{Mesh: "http://10.0.0.5:7946", Key: []byte("short")}, []string{"mesh key: 5 bytes", "16 or more"}},
		{"not a URL", &LBSync{Mesh: "10.0.0.5:7946", Key: testKey}, []string{`--from "10.0.0.5:7946"`, "http://"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate()
			if tc.want == nil {
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

	// Once refuses too, before reading anything: no connection is made, the balancer is not
	// touched.
	var dialed atomic.Int64
	refuse := &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		dialed.Add(1)
		return nil, errors.New("dialed")
	}}}
	admin := startBalancer(t, httpBackend(t))
	reader := &LBSync{Admin: admin}
	before := backendStates(t, reader)
	s := &LBSync{Mesh: "http://192.0.2.1:1", Admin: admin, Every: time.Second, Client: refuse}
	changes, err := s.Once(context.Background())
	if !errors.Is(err, errNoKey) || len(changes) != 0 || !strings.Contains(err.Error(), "--from") {
		t.Errorf("Once off loopback without a key: %q, %v; want errNoKey naming --from and no change", changes, err)
	}
	if n := dialed.Load(); n != 0 {
		t.Errorf("Once off loopback without a key made %d connections; want none", n)
	}
	if after := backendStates(t, reader); !maps.Equal(after, before) {
		t.Errorf("balancer %v, was %v", after, before)
	}
}

// The signatures are what auth.go and docs/mesh.md say, byte for byte: the bulletin's is
// unchanged by the route's, and the two domains never sign the same bytes.
func TestSignaturesAreTheDocumentedBytes(t *testing.T) {
	mac := func(msg string) string {
		m := hmac.New(sha256.New, testKey)
		m.Write([]byte(msg))
		return "v1=" + hex.EncodeToString(m.Sum(nil))
	}
	body := []byte(`{"ready":true}` + "\n")
	if got, want := sign(testKey, "b", "a", 1700000000123456789, body), mac("zero502-mesh-bulletin-v1\nb\na\n1700000000123456789\n"+string(body)); got != want {
		t.Errorf("bulletin signature %s; want %s", got, want)
	}
	if got, want := signRoute(testKey, "00112233445566778899aabbccddeeff", body), mac("zero502-mesh-route-v1\n00112233445566778899aabbccddeeff\n"+string(body)); got != want {
		t.Errorf("route signature %s; want %s", got, want)
	}
	if signed, valid := signatureValid(signRoute(testKey, "c", body), signRoute(testKey, "d", body)); !signed || valid {
		t.Errorf("a signature for challenge c verifies for d (signed %v, valid %v)", signed, valid)
	}
}
