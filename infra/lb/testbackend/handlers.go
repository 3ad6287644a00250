package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// backend is one test backend: its name, its sick switch and its request counters.
type backend struct {
	name string
	sick atomic.Bool

	mu       sync.Mutex
	requests map[string]int64 // "METHOD /path" → count
}

func newBackend(name string) *backend {
	return &backend{name: name, requests: map[string]int64{}}
}

func (b *backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/stats" {
		b.mu.Lock()
		b.requests[r.Method+" "+r.URL.Path]++
		b.mu.Unlock()
	}
	w.Header().Set("X-Backend", b.name)
	switch r.URL.Path {
	case "/":
		b.root(w)
	case "/health":
		b.health(w)
	case "/sick":
		b.sick.Store(true)
		fmt.Fprintln(w, "sick")
	case "/well":
		b.sick.Store(false)
		fmt.Fprintln(w, "well")
	case "/hang":
		hang(w, r)
	case "/slow":
		slow(w, r)
	case "/big":
		big(w, r)
	case "/slowbody":
		slowBody(w, r)
	case "/headers":
		headers(w, r)
	case "/upload":
		upload(w, r)
	case "/drop":
		drop(w, r)
	case "/stats":
		b.stats(w)
	default:
		http.NotFound(w, r)
	}
}

func (b *backend) root(w http.ResponseWriter) {
	if b.sick.Load() {
		http.Error(w, "sick "+b.name, http.StatusInternalServerError)
		return
	}
	fmt.Fprintln(w, b.name)
}

func (b *backend) health(w http.ResponseWriter) {
	if b.sick.Load() {
		http.Error(w, "sick", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (b *backend) stats(w http.ResponseWriter) {
	b.mu.Lock()
	snapshot := make(map[string]int64, len(b.requests))
	for k, v := range b.requests {
		snapshot[k] = v
	}
	b.mu.Unlock()
	writeJSON(w, map[string]any{"name": b.name, "sick": b.sick.Load(), "requests": snapshot})
}

// hang stays silent for ?s= seconds (default 30) or until the client goes away.
func hang(w http.ResponseWriter, r *http.Request) {
	d := durationParam(r, "s", time.Second, 30*time.Second)
	select {
	case <-time.After(d):
		fmt.Fprintln(w, "late")
	case <-r.Context().Done():
	}
}

func slow(w http.ResponseWriter, r *http.Request) {
	d := durationParam(r, "ms", time.Millisecond, 0)
	select {
	case <-time.After(d):
	case <-r.Context().Done():
		return
	}
	fmt.Fprintln(w, r.URL.Query().Get("id"))
}

// pattern returns n deterministic bytes (a byte counter mixed with its high bits).
func pattern(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + i>>9 + i>>17)
	}
	return p
}

func big(w http.ResponseWriter, r *http.Request) {
	size := intParam(r, "size", 1<<20)
	body := pattern(size)
	sum := sha256.Sum256(body)
	w.Header().Set("X-Body-Sha256", hex.EncodeToString(sum[:]))
	w.Header().Set("Content-Type", "application/octet-stream")
	switch r.URL.Query().Get("framing") {
	case "", "length":
		w.Header().Set("Content-Length", strconv.Itoa(size))
		_, _ = w.Write(body)
	case "chunked":
		fl, _ := w.(http.Flusher)
		for len(body) > 0 {
			n := min(len(body), 16<<10)
			_, _ = w.Write(body[:n])
			if fl != nil {
				fl.Flush()
			}
			body = body[n:]
		}
	case "close":
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nX-Backend: %s\r\nX-Body-Sha256: %s\r\nConnection: close\r\n\r\n",
			w.Header().Get("X-Backend"), hex.EncodeToString(sum[:]))
		_, _ = buf.Write(body)
		_ = buf.Flush()
	default:
		http.Error(w, "framing must be length, chunked or close", http.StatusBadRequest)
	}
}

// slowBody trickles a chunked body: the transfer takes chunks × every in total, but the silence
// between two chunks is only every.
func slowBody(w http.ResponseWriter, r *http.Request) {
	chunks := intParam(r, "chunks", 16)
	every := 250 * time.Millisecond
	if d, err := time.ParseDuration(r.URL.Query().Get("every")); err == nil && d >= 0 {
		every = d
	}
	size := intParam(r, "size", 1024)
	w.Header().Set("X-Body-Length", strconv.Itoa(chunks*size))
	rc := http.NewResponseController(w)
	chunk := pattern(size)
	for i := 0; i < chunks; i++ {
		if _, err := w.Write(chunk); err != nil {
			return
		}
		_ = rc.Flush()
		if i < chunks-1 {
			select {
			case <-time.After(every):
			case <-r.Context().Done():
				return
			}
		}
	}
}

func headers(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("hop") == "1" {
		h := w.Header()
		h.Set("Keep-Alive", "timeout=99")
		h.Set("Proxy-Connection", "keep-alive")
		h.Set("Upgrade", "bogus/1")
		h.Set("X-Resp-Hop", "1")
		h.Set("Connection", "X-Resp-Hop")
	}
	writeJSON(w, map[string]any{
		"method":            r.Method,
		"uri":               r.RequestURI,
		"proto":             r.Proto,
		"host":              r.Host,
		"remote_addr":       r.RemoteAddr,
		"content_length":    r.ContentLength,
		"transfer_encoding": r.TransferEncoding,
		"headers":           r.Header,
	})
}

func upload(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	h := sha256.New()
	n, err := io.Copy(h, r.Body)
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, map[string]any{"length": n, "sha256": hex.EncodeToString(h.Sum(nil))})
}

// drop reads the whole request, then closes the connection without a byte of response.
func drop(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	_ = conn.Close()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

func intParam(r *http.Request, key string, def int) int {
	if n, err := strconv.Atoi(r.URL.Query().Get(key)); err == nil && n >= 0 {
		return n
	}
	return def
}

func durationParam(r *http.Request, key string, unit, def time.Duration) time.Duration {
	if n, err := strconv.Atoi(r.URL.Query().Get(key)); err == nil && n >= 0 {
		return time.Duration(n) * unit
	}
	return def
}
