package lb

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/http1"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// fastBackend answers every request with a fixed 13-byte response, so a benchmark measures the
// LB, not the backend.
func fastBackend(b testing.TB) string {
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nhello, world\n")
	return tcpserver.Serve(b, func(c net.Conn) {
		buf := make([]byte, 8<<10)
		have := 0
		for {
			n, err := c.Read(buf[have:])
			if err != nil {
				return
			}
			have += n
			for {
				i := bytes.Index(buf[:have], []byte("\r\n\r\n"))
				if i < 0 {
					break
				}
				if _, err := c.Write(resp); err != nil {
					return
				}
				copy(buf, buf[i+4:have])
				have -= i + 4
			}
		}
	})
}

func benchLB(b *testing.B) *testLB {
	set := LabSettings("127.0.0.1:0", []string{fastBackend(b), fastBackend(b)})
	set.Interval, set.Timeout = time.Hour, time.Second
	return startLBB(b, set)
}

func startLBB(b *testing.B, set Settings) *testLB {
	s, err := New(set, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = s.Run(ctx) }()
	b.Cleanup(cancel)
	return &testLB{Server: s, stop: cancel}
}

// oneConn sends requests on one keep-alive connection and checks each response.
type oneConn struct {
	c  net.Conn
	br *bufio.Reader
}

var benchReq = []byte("GET /bench HTTP/1.1\r\nHost: bench\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n")

func (o *oneConn) roundTrip() error {
	if _, err := o.c.Write(benchReq); err != nil {
		return err
	}
	cl := -1
	for {
		line, err := o.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) == 2 {
			break
		}
		if bytes.HasPrefix(line, []byte("Content-Length: ")) {
			cl, _ = strconv.Atoi(string(bytes.TrimSpace(line[16:])))
		}
	}
	_, err := o.br.Discard(cl)
	return err
}

func dialOne(b *testing.B, addr string) *oneConn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return &oneConn{c: c, br: bufio.NewReader(c)}
}

// BenchmarkProxyKeepAlive: one client connection, requests one after another, through the LB
// with upstream keep-alive.
func BenchmarkProxyKeepAlive(b *testing.B) {
	l := benchLB(b)
	o := dialOne(b, l.Addr())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := o.roundTrip(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProxyParallel: GOMAXPROCS×4 keep-alive client connections at once.
func BenchmarkProxyParallel(b *testing.B) {
	l := benchLB(b)
	b.SetParallelism(4)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c, err := net.Dial("tcp", l.Addr())
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		o := &oneConn{c: c, br: bufio.NewReader(c)}
		for pb.Next() {
			if err := o.roundTrip(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkDirectKeepAlive is the baseline: the same client straight to the backend.
func BenchmarkDirectKeepAlive(b *testing.B) {
	o := dialOne(b, fastBackend(b))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := o.roundTrip(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseRequest(b *testing.B) {
	head := []byte("GET /some/path?x=1 HTTP/1.1\r\nHost: example.test\r\nUser-Agent: bench/1.0\r\nAccept: */*\r\n" +
		"Accept-Encoding: gzip\r\nConnection: keep-alive\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n")
	var r http1.Request
	out := make([]byte, 0, 1024)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := http1.ParseRequest(head, &r); err != nil {
			b.Fatal(err)
		}
		out = http1.AppendUpstreamHead(out[:0], &r, []byte("127.0.0.1"), false, false, "b:1")
	}
}

// BenchmarkIdleClientMemory opens idle keep-alive client connections (each after one request)
// and reports the LB's heap + goroutine stack growth per connection. The client side of each
// connection lives in this process too, so its own cost (a net.Conn, ~0.3 KiB) is measured
// alone first, against a listener that never accepts (the kernel completes the connections in
// its backlog) and subtracted.
func BenchmarkIdleClientMemory(b *testing.B) {
	const n = 2000
	l := benchLB(b)
	measure := func(addr string, request bool) float64 {
		var conns []net.Conn
		before := memInUse()
		for i := 0; i < n; i++ {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			if request {
				o := &oneConn{c: c, br: bufio.NewReaderSize(c, 256)}
				if err := o.roundTrip(); err != nil {
					b.Fatal(err)
				}
			}
			conns = append(conns, c)
		}
		time.Sleep(200 * time.Millisecond)
		after := memInUse()
		for _, c := range conns {
			c.Close()
		}
		return float64(after-before) / n
	}
	for i := 0; i < b.N; i++ {
		backlog, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		clientOnly := measure(backlog.Addr().String(), false)
		backlog.Close()
		withLB := measure(l.Addr(), true)
		b.ReportMetric(withLB-clientOnly, "B/idle-conn")
	}
}

func memInUse() uint64 {
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}
