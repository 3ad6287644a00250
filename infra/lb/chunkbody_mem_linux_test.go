package lb

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// residentBytes is this process's resident set size (/proc/self/statm).
func residentBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// A 1 GiB chunked upload streams through the LB with backpressure: the process (LB, client and
// backend together) grows by far less than the body while it passes. Under the race detector,
// which makes it ten times slower, the body is 256 MiB, still four times the bound.
func TestGigabyteChunkedUploadDoesNotGrowMemory(t *testing.T) {
	total := 1 << 30
	if raceEnabled {
		total = 256 << 20
	}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 256<<10)
		var n int64
		var err error
		for err == nil {
			var k int
			k, err = r.Body.Read(buf)
			n += int64(k)
		}
		if err == io.EOF {
			err = nil
		}
		fmt.Fprintf(w, "%d %v %v", n, r.TransferEncoding, err)
	}))
	t.Cleanup(backend.Close)
	l := startLB(t, fastSettings(backend.Listener.Addr().String()))

	runtime.GC()
	debug.FreeOSMemory()
	base := residentBytes(t)
	var peak atomic.Int64
	peak.Store(base)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if r := residentBytes(t); r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	}()

	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	chunk := bigBody[:64<<10]
	frame := append([]byte(fmt.Sprintf("%x\r\n", len(chunk))), chunk...)
	frame = append(frame, "\r\n"...)
	w := bufio.NewWriterSize(c, 256<<10)
	io.WriteString(w, "POST /count HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
	for sent := 0; sent < total; sent += len(chunk) {
		if _, err := w.Write(frame); err != nil {
			t.Fatalf("after %d bytes: %v", sent, err)
		}
	}
	io.WriteString(w, "0\r\n\r\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "POST"})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	close(stop)
	<-sampled
	if want := fmt.Sprintf("%d [chunked] <nil>", total); resp.StatusCode != 200 || string(body) != want {
		t.Fatalf("%d MiB chunked upload: %d %q, want 200 %q", total>>20, resp.StatusCode, body, want)
	}
	grew := peak.Load() - base
	t.Logf("resident set: %d MiB before, at most %d MiB more during a %d MiB chunked upload", base>>20, grew>>20, total>>20)
	if grew > 64<<20 {
		t.Fatalf("the process grew by %d MiB while %d MiB streamed through the LB: the body is being held", grew>>20, total>>20)
	}
}
