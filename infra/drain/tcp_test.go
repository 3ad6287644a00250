package drain

import (
	"bufio"
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// tcpServer is ServeTCP with a line echo handler on a real listener and a fake clock.
type tcpServer struct {
	addr      string
	clk       *clock.Fake
	cancel    context.CancelFunc
	done      chan error
	unhealthy atomic.Bool // what the server would report to its balancer
}

func startTCP(t *testing.T) *tcpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &tcpServer{addr: ln.Addr().String(), clk: clock.NewFake(t0), cancel: cancel, done: make(chan error, 1)}
	echo := func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	}
	hs := Handshake{Window: window, Shutdown: shutdown, Clock: s.clk, OnPhase: func(p Phase, _ time.Time) {
		if p == PhaseDraining {
			s.unhealthy.Store(true)
		}
	}}
	go func() { s.done <- ServeTCP(ctx, ln, echo, hs) }()
	t.Cleanup(cancel)
	return s
}

func echoOnce(t *testing.T, c *conn, msg string) {
	t.Helper()
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		t.Fatalf("write: %v", err)
	}
	got, err := c.r.ReadString('\n')
	if err != nil || got != msg+"\n" {
		t.Fatalf("echo of %q = %q %v", msg, got, err)
	}
}

func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return true
}

func TestTCPDrainKeepsAcceptingThenRefusesAndFinishes(t *testing.T) {
	s := startTCP(t)
	old := dial(t, s.addr)
	echoOnce(t, old, "before")

	s.cancel()
	poll.Until(t, deadline, "the drain window timer", func() bool { return s.clk.Waiters() == 1 })
	if !s.unhealthy.Load() {
		t.Fatal("the draining hook did not run before the window")
	}
	fresh := dial(t, s.addr)
	echoOnce(t, fresh, "new connection during the window")
	fresh.Close()
	echoOnce(t, old, "old connection during the window")

	s.clk.Advance(window)
	poll.Until(t, deadline, "connections to be refused", func() bool { return refused(s.addr) })
	echoOnce(t, old, "in flight after the window")
	select {
	case err := <-s.done:
		t.Fatalf("ServeTCP returned with a connection open: %v", err)
	default:
	}
	old.Close() // the client finishes; ServeTCP returns without the budget running out
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("ServeTCP = %v, want nil", err)
		}
	case <-time.After(deadline):
		t.Fatal("ServeTCP did not return after the last connection closed")
	}
}

func TestTCPShutdownBudgetClosesWhatRemains(t *testing.T) {
	s := startTCP(t)
	held := dial(t, s.addr)
	echoOnce(t, held, "hi")
	s.cancel()
	poll.Until(t, deadline, "the drain window timer", func() bool { return s.clk.Waiters() == 1 })
	s.clk.Advance(window)
	poll.Until(t, deadline, "the shutdown budget timer", func() bool { return s.clk.Waiters() == 1 })
	s.clk.Advance(shutdown)
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("ServeTCP = %v, want nil", err)
		}
	case <-time.After(deadline):
		t.Fatal("ServeTCP did not return when the budget ran out")
	}
	if _, err := held.r.ReadByte(); err == nil {
		t.Fatal("the held connection is still open after the budget")
	}
}
