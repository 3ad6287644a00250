package acceptance

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Slow uploads are the clients' business: three clients trickling a 100 KB body for longer than
// --body-timeout in total each get their 200, and no backend leaves rotation for it (the body
// timeout bounds silence, not duration; a slow client is never held against a backend).
func TestSlowUploadsEjectNoBackend(t *testing.T) {
	t.Parallel()
	backends := threeBackends(t)
	l := startLB(t, backends, append([]string{"--body-timeout", "500ms", "--client-header-timeout", "2s"}, calm...)...)
	body := bytes.Repeat([]byte("0123456789abcdef"), 100_000/16)
	sum := sha256.Sum256(body)
	want := hex.EncodeToString(sum[:])
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = trickleUpload(l.addr, body, 25, 100*time.Millisecond, want)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("slow upload %d (100 KB over ~2.5s, --body-timeout 500ms): %v", i, err)
		}
	}
	for addr, st := range l.status(t) {
		if !st.InRotation || len(st.Transitions) != 1 || !strings.HasPrefix(st.Transitions[0].Reason, "first health check: ") {
			t.Errorf("backend %s after slow uploads: state %s, transitions %+v; want in rotation, untouched", addr, st.State, st.Transitions)
		}
	}
	if resp, _ := l.mustGet(t, "/"); resp.StatusCode != 200 {
		t.Fatalf("GET / after the slow uploads: %d", resp.StatusCode)
	}
}

// trickleUpload POSTs body to /upload in pieces, every apart, and checks the backend got it all.
func trickleUpload(addr string, body []byte, pieces int, every time.Duration, wantSHA string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	go func() {
		if _, err := fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: lb\r\nContent-Length: %d\r\n\r\n", len(body)); err != nil {
			return
		}
		piece := (len(body) + pieces - 1) / pieces
		for off := 0; off < len(body); off += piece {
			if off > 0 {
				time.Sleep(every) // pacing the client, not an assertion
			}
			if _, err := c.Write(body[off:min(off+piece, len(body))]); err != nil {
				return
			}
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "POST"})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var got struct {
		Length int64  `json:"length"`
		SHA256 string `json:"sha256"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(data, &got) != nil || got.Length != int64(len(body)) || got.SHA256 != wantSHA {
		return fmt.Errorf("status %d, %q; want 200 and all %d bytes", resp.StatusCode, data, len(body))
	}
	return nil
}
