package edge

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/zero502/zero502/internal/testrig/poll"
)

// scrape reads GET /metrics at addr and returns its lines.
func scrape(t *testing.T, addr net.Addr) string {
	t.Helper()
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %d %v\n%s", addr, resp.StatusCode, err, body)
	}
	return string(body)
}

// The forwarder and the origin each serve their counts on GET /metrics, and the numbers follow
// the connections.
func TestForwardAndOriginServeTheirCountsOnMetrics(t *testing.T) {
	log, _ := newLogs()
	m := &innerMap{}
	relay := startRelay(t, &Relay{Backend: startBackend(t, m), Map: m, Trusted: []netip.Prefix{loopback}, Logger: log,
		Metrics: "127.0.0.1:0"})
	fwd := startForwarder(t, &Forwarder{Origins: []string{relay.Addr().String()}, Logger: log, Metrics: "127.0.0.1:0"})

	c := dialFrom(t, "127.0.0.1", fwd.Addr().String())
	echoLine(t, c, bufio.NewReader(c), "x")
	c.Close()
	poll.Until(t, deadline, "the relay to count the header", func() bool { return relay.Counts().Headers == 1 })
	poll.Until(t, deadline, "the edge to see the connection end", func() bool { return fwd.Upstreams()[0].InFlight == 0 })

	for _, tc := range []struct {
		role string
		addr net.Addr
		want []string
	}{
		{"forward", fwd.MetricsAddr(), []string{
			`zero502_edge_connections_total{outcome="accepted",role="forward"} 1`,
			`zero502_edge_connections_total{outcome="unreachable",role="forward"} 0`,
			`zero502_edge_draining{role="forward"} 0`,
			`zero502_edge_upstream_state{state="healthy",upstream="` + relay.Addr().String() + `"} 1`,
			`zero502_edge_upstream_state{state="draining",upstream="` + relay.Addr().String() + `"} 0`,
			`zero502_edge_upstream_in_rotation{upstream="` + relay.Addr().String() + `"} 1`,
			`zero502_edge_upstream_connections{upstream="` + relay.Addr().String() + `"} 0`,
			"zero502_edge_reconnected_after_eject_total 0",
		}},
		{"origin", relay.MetricsAddr(), []string{
			// the edge's first TCP check of its upstream, then the client's connection
			`zero502_edge_connections_total{outcome="accepted",role="origin"} 2`,
			`zero502_edge_connections_total{outcome="empty",role="origin"} 1`,
			`zero502_edge_connections_total{outcome="proxy_header",role="origin"} 1`,
			`zero502_edge_draining{role="origin"} 0`,
			"go_goroutines ",
		}},
	} {
		got := scrape(t, tc.addr)
		for _, w := range tc.want {
			if !strings.Contains(got, "\n"+w) {
				t.Errorf("%s /metrics lacks %q:\n%s", tc.role, w, got)
			}
		}
	}
}

func TestMetricsListenIsValidated(t *testing.T) {
	err := (&Forwarder{Listen: ":0", Origins: []string{"10.0.0.5:443"}, Metrics: "nonsense"}).Validate()
	if err == nil || !strings.Contains(err.Error(), `--metrics "nonsense"`) {
		t.Fatalf("Validate = %v, want an error naming --metrics and its value", err)
	}
	if (&Forwarder{Listen: ":0", Origins: []string{"10.0.0.5:443"}}).MetricsAddr() != nil {
		t.Error("MetricsAddr without --metrics is not nil")
	}
}
