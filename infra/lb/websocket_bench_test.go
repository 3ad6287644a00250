package lb

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// BenchmarkWebSocketEcho measures WebSocket echo throughput through zero502's tunnel and, when
// haproxy is installed, through HAProxy in http mode (it tunnels after the 101), against the
// same echo server: 8 connections each echo 16 KiB messages; MB/s counts both directions.
// Compare the two MB/s figures (issue: zero502 at least 0.9× HAProxy).
//
//	go test -run XXX -bench WebSocketEcho -benchtime 5s ./infra/lb
func BenchmarkWebSocketEcho(b *testing.B) {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(http.ResponseWriter, *http.Request) {}) // 200: in rotation from the first check
	mux.HandleFunc("/", wsEcho("echo"))
	echo := httptest.NewServer(mux)
	b.Cleanup(echo.Close)
	set := LabSettings("127.0.0.1:0", []string{echo.Listener.Addr().String()})
	set.Interval, set.Timeout = time.Hour, time.Second
	l := startLBB(b, set)
	b.Run("zero502", func(b *testing.B) { benchEcho(b, l.Addr()) })
	b.Run("haproxy", func(b *testing.B) {
		bin := needHAProxy(b)
		front := deadAddr(b)
		startHAProxy(b, bin, "http", front, "server echo "+echo.Listener.Addr().String())
		benchEcho(b, front)
	})
}

func benchEcho(b *testing.B, addr string) {
	const conns, size = 8, 16 << 10
	msg := bytes.Repeat([]byte("w"), size)
	ws := make([]*wsConn, conns)
	for i := range ws {
		c, err := wsDial(addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.c.Close()
		ws[i] = c
	}
	b.SetBytes(2 * size)
	b.ResetTimer()
	var wg sync.WaitGroup
	per := (b.N + conns - 1) / conns
	for _, c := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if got, err := c.echo(msg); err != nil || len(got) != size {
					b.Errorf("echo: %d bytes, %v", len(got), err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
