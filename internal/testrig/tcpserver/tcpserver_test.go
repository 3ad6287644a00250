package tcpserver

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

func TestServeHandsEveryConnectionToTheHandlerAndClosesIt(t *testing.T) {
	addr := Serve(t, func(c net.Conn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		_, _ = io.WriteString(c, "echo "+line)
	})
	for _, msg := range []string{"one\n", "two\n"} {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(c, msg)
		got, err := io.ReadAll(c) // ends only when the rig closed the connection
		c.Close()
		if err != nil || string(got) != "echo "+msg {
			t.Fatalf("got %q, %v; want %q and the connection closed", got, err, "echo "+msg)
		}
	}
}

func TestServeStopsListeningWhenTheTestEnds(t *testing.T) {
	var addr string
	t.Run("server", func(t *testing.T) { addr = Serve(t, func(net.Conn) {}) })
	if c, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts after its test ended", addr)
	}
}

// FreePorts hands out distinct ports from infra/ports (never the well-known ones) that a server
// can then bind.
func TestFreePortsAreDistinctAndBindable(t *testing.T) {
	ps := FreePorts(t, 3)
	seen := map[int]bool{}
	for _, p := range ps {
		if seen[p] || p < 10000 {
			t.Fatalf("ports %v: want three distinct ones from 10000 up", ps)
		}
		seen[p] = true
	}
	ln, err := net.Listen("tcp", FreeAddr(t))
	if err != nil {
		t.Fatalf("listen on FreeAddr: %v", err)
	}
	ln.Close()
}
