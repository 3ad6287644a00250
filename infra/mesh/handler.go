package mesh

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxBulletin bounds a bulletin's body: a report and one probe per peer fit many times over.
const maxBulletin = 1 << 20

func (n *Node) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		if !n.reachable.Load() {
			http.Error(w, "unreachable (drill)", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("POST /mesh/bulletin", n.receive)
	mux.HandleFunc("GET /mesh/verdicts", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(n.Snapshot())
	})
	mux.HandleFunc("GET /route", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(n.RouteView())
	})
	mux.Handle("GET /metrics", n.metricsHandler())
	return mux
}

// receive records a peer's bulletin. A server speaks only for itself: every probe must be its
// own, and no peer may report for this node. Times are stamped on receipt.
func (n *Node) receive(w http.ResponseWriter, r *http.Request) {
	var b Bulletin
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBulletin)).Decode(&b); err != nil {
		http.Error(w, fmt.Sprintf("bulletin is not JSON: %v", err), http.StatusBadRequest)
		return
	}
	from := b.Report.Server
	if from == n.Name {
		http.Error(w, fmt.Sprintf("bulletin claims to be from %s, which is this server", from), http.StatusBadRequest)
		return
	}
	now := n.Clock.Now()
	b.Report.At = now
	for i := range b.Probes {
		if b.Probes[i].Prober != from {
			http.Error(w, fmt.Sprintf("bulletin from %q carries a probe by %q; a server sends only its own probes",
				from, b.Probes[i].Prober), http.StatusBadRequest)
			return
		}
		b.Probes[i].At = now
	}
	if err := n.eval.Record(b); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// FetchSnapshot reads a node's view from GET /mesh/verdicts at addr (host:port).
func FetchSnapshot(addr string, timeout time.Duration) (Snapshot, error) {
	c := &http.Client{Timeout: timeout}
	resp, err := c.Get("http://" + addr + "/mesh/verdicts")
	if err != nil {
		return Snapshot{}, fmt.Errorf("read verdicts from %s: %w; is `zero502 mesh serve` listening there?", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return Snapshot{}, fmt.Errorf("read verdicts from %s: answered %d: %s", addr, resp.StatusCode, msg)
	}
	var s Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return Snapshot{}, fmt.Errorf("read verdicts from %s: not a mesh snapshot: %w", addr, err)
	}
	return s, nil
}
