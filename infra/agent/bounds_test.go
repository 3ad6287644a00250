package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// serveWith runs s (its Listener, TLS and Logger filled in here) on loopback until the test ends.
func serveWith(t *testing.T, s *Server, conf *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Listener, s.TLS, s.Logger = ln, conf, testLogger(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// A client that passes the PROXY sniff with the start of a TLS record and then stalls in the
// handshake is closed once HandshakeTimeout passes.
func TestStalledTLSHandshakeIsClosed(t *testing.T) {
	conf, _ := newPKI(t)
	addr := serveWith(t, &Server{Dedup: NewDedupStore(0), HandshakeTimeout: 300 * time.Millisecond}, conf)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}) // a ClientHello record that never ends
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(5 * time.Second))
	_, _ = io.Copy(io.Discard, c)
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("a stalled handshake was held %s, want closed within about 300ms", took)
	}
}

// session dials addr with TLS and sends msg frames with ids, returning the ack of each (or
// the error that ended the session).
func sendIDs(t *testing.T, addr string, client *tls.Config, ids ...string) ([]Frame, error) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, client)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var acks []Frame
	for _, id := range ids {
		if err := writeFrame(c, Frame{Kind: kindMsg, ID: id, Body: "b"}); err != nil {
			return acks, err
		}
		ack, err := readFrame(c)
		if err != nil {
			return acks, err
		}
		acks = append(acks, ack)
	}
	return acks, nil
}

// A flood of new ids fills the dedup store and is refused beyond it (neither applied nor
// acknowledged), but never evicts an id inside the replay window: a genuine replay sent after
// the flood is still caught as a duplicate. An id above maxIDLen is refused.
func TestGenuineReplayIsCaughtUnderAFloodOfNewIDs(t *testing.T) {
	server, client := newPKI(t)
	applied := map[string]int{}
	s := &Server{Dedup: NewDedupStore(100), Apply: func(f Frame) { applied[f.ID]++ }}
	addr := serveWith(t, s, server)
	if acks, err := sendIDs(t, addr, client, "genuine-1"); err != nil || acks[0].Dup {
		t.Fatalf("the genuine message: %v %v", acks, err)
	}
	flood := make([]string, 500)
	for i := range flood {
		flood[i] = fmt.Sprintf("flood-%d", i)
	}
	acks, err := sendIDs(t, addr, client, flood...)
	if err == nil || len(acks) != 99 {
		t.Fatalf("the flood: %d acks, err %v; want 99 (the store's 100 ids less the genuine one), then the session closed", len(acks), err)
	}
	acks, err = sendIDs(t, addr, client, "genuine-1")
	if err != nil || !acks[0].Dup {
		t.Fatalf("the genuine replay after the flood: %v %v, want an ack marked duplicate", acks, err)
	}
	if applied["genuine-1"] != 1 {
		t.Fatalf("the genuine message was applied %d times, want once", applied["genuine-1"])
	}
	if _, err := sendIDs(t, addr, client, strings.Repeat("x", maxIDLen+1)); err == nil {
		t.Fatalf("an id of %d bytes was acknowledged, want it refused", maxIDLen+1)
	}
	if c := s.Counts(); c.Refused != 2 || c.Duplicates != 1 {
		t.Fatalf("counts %+v, want 2 refused, 1 duplicate", c)
	}
}

// Ids older than the replay window make room for new ones once the store is full.
func TestDedupStoreForgetsOnlyIDsOutsideTheWindow(t *testing.T) {
	s := NewDedupStore(2)
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	if s.First("a") != New || s.First("b") != New || s.First("c") != Refused {
		t.Fatal("a full store inside the window let a new id in")
	}
	now = now.Add(defaultReplayWindow + time.Second)
	if s.First("c") != New || s.First("b") != Duplicate || s.First("a") != New {
		t.Fatal("past the window, the oldest id did not make room, or one was forgotten before it had to be")
	}
}
