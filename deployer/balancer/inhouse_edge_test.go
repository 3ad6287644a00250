package balancer_test

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/edge"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// TestInHouseRotationDrivesARealEdge: the same client, pointed at an edge's admin API by its
// target collection (/admin/upstreams), rolls an LB instance behind the edge: add the new one,
// wait until the edge has it in rotation, drain the old one, wait until its open connections
// end, remove it.
func TestInHouseRotationDrivesARealEdge(t *testing.T) {
	t.Parallel()
	old, fresh := tcpSink(t), tcpSink(t)
	fwd := &edge.Forwarder{Listen: "127.0.0.1:0", Origins: []string{old}, Admin: "127.0.0.1:0",
		Check: edge.UpstreamCheck{Interval: 150 * time.Millisecond, Timeout: 120 * time.Millisecond, UnhealthyThreshold: 3}}
	if err := fwd.Open(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fwd.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	rot := balancer.NewEdgeAdmin(fwd.AdminAddr().String(), "")
	var _ balancer.Rotation = rot

	// A client connection on the old instance (the only one yet) keeps it from counting as drained.
	held, err := net.Dial("tcp", fwd.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(held, "x"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "a connection open through the edge", func() (bool, error) {
		return inflight(fwd, old) == 1, nil
	})

	if err := rot.Add(ctx, fresh); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if st, err := rot.TargetState(ctx, fresh); err != nil || st.InRotation || st.State != "joining" {
		t.Fatalf("right after Add: %+v, %v; want joining", st, err)
	}
	waitFor(t, 5*time.Second, "the new instance in the edge's rotation", func() (bool, error) {
		st, err := rot.TargetState(ctx, fresh)
		return st.InRotation, err
	})

	if err := rot.Remove(ctx, old); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("Remove in rotation: %v, want the edge's 409", err)
	}
	if err := rot.Drain(ctx, old); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if st, err := rot.TargetState(ctx, old); err != nil || st.InRotation || st.State != "draining" {
		t.Fatalf("after Drain: %+v, %v; want draining", st, err)
	}
	if ok, err := rot.Drained(ctx, old); err != nil || ok {
		t.Fatalf("Drained with a connection open on it: %v, %v; want false", ok, err)
	}
	_ = held.Close()
	waitFor(t, 5*time.Second, "the old instance drained", func() (bool, error) { return rot.Drained(ctx, old) })
	if err := rot.Remove(ctx, old); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := rot.TargetState(ctx, old); err == nil || !strings.Contains(err.Error(), "/admin/upstreams/"+old) {
		t.Fatalf("TargetState of a removed instance: %v, want unknown, naming the edge's path", err)
	}
}

// inflight is target's in_flight as the edge lists it (open connections).
func inflight(fwd *edge.Forwarder, target string) int64 {
	for _, st := range fwd.Upstreams() {
		if st.Address == target {
			return st.InFlight
		}
	}
	return -1
}

// tcpSink accepts connections, reads the PROXY header and whatever follows until the peer
// closes: an upstream that holds connections open.
func tcpSink(t *testing.T) string {
	t.Helper()
	return tcpserver.Serve(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
}
