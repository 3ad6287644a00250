package balancer_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/dnsset"
	"github.com/zero502/zero502/infra/dnsset/zonefile"
)

// TestDNSSetAgainstARealZoneServer drives the edges' A set in a real zone file served by the
// real authoritative server, resolved by Go's own DNS client: an edge drained at the set is gone
// from the answers at once, drained only after the TTL plus the monitor's detection, and back
// after Add; the last edge is never removed.
func TestDNSSetAgainstARealZoneServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	zone := filepath.Join(dir, "edge.zone")
	set, err := zonefile.NewSet(zone, "edge.zero502.test.", zonefile.Options{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, a := range []string{"127.0.0.21", "127.0.0.22"} {
		if err := set.Add(ctx, netip.MustParseAddr(a)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := zonefile.NewServer(zone, nil).Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Shutdown(context.Background()) })
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, l.Addr)
	}}
	answers := func() []string {
		got, err := resolver.LookupHost(ctx, "edge.zero502.test")
		if err != nil {
			t.Fatalf("resolve: %v", err)
		}
		slices.Sort(got)
		return got
	}

	clk := clock.NewFake(time.Unix(1e9, 0))
	edge := config.Edge{Drain: 3 * time.Second, DNSTTL: time.Second, CheckInterval: 250 * time.Millisecond, UnhealthyThreshold: 2}
	rot := balancer.NewDNSSet(set.Name(), set, edge, clk)
	if rot.Gone() != 1500*time.Millisecond {
		t.Errorf("Gone %s, want the TTL 1s + 250ms × 2", rot.Gone())
	}
	first, second := "127.0.0.21:8443", "127.0.0.22:8443"
	if st, err := rot.TargetState(ctx, first); err != nil || !st.InRotation {
		t.Fatalf("before the drain: %+v, %v; want in the A set", st, err)
	}

	if err := rot.Drain(ctx, first); err != nil {
		t.Fatal(err)
	}
	if got := answers(); !slices.Equal(got, []string{"127.0.0.22"}) {
		t.Errorf("answers right after the drain: %v, want the other edge only", got)
	}
	if st, err := rot.TargetState(ctx, first); err != nil || st.InRotation {
		t.Errorf("after the drain: %+v, %v; want out of the A set", st, err)
	}
	if ok, err := rot.Drained(ctx, first); err != nil || ok {
		t.Errorf("Drained at once: %v, %v; want false until resolvers forgot it", ok, err)
	}
	clk.Advance(rot.Gone() - time.Millisecond)
	if ok, _ := rot.Drained(ctx, first); ok {
		t.Error("Drained before the TTL plus detection passed")
	}
	clk.Advance(time.Millisecond)
	if ok, err := rot.Drained(ctx, first); err != nil || !ok {
		t.Errorf("Drained after the TTL plus detection: %v, %v; want true", ok, err)
	}

	// The other edge is the last one: the provider refuses to empty the set.
	if err := rot.Drain(ctx, second); !errors.Is(err, dnsset.ErrLastAddress) {
		t.Errorf("draining the last edge: %v, want ErrLastAddress", err)
	}
	if err := rot.Add(ctx, first); err != nil {
		t.Fatal(err)
	}
	if got := answers(); !slices.Equal(got, []string{"127.0.0.21", "127.0.0.22"}) {
		t.Errorf("answers after Add: %v, want both edges", got)
	}
	if _, err := rot.TargetState(ctx, "edge-1:8443"); err == nil {
		t.Error("a target without an IP address: want an error naming hosts[].address")
	}
}
