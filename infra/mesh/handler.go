package mesh

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxBulletin bounds a bulletin's body: a report and one probe per peer fit many times over.
const maxBulletin = 1 << 20

// maxSnapshot bounds a GET /mesh/verdicts answer's body (`mesh verdicts`): a verdict with a vote
// per witness is a few hundred bytes a pair, so a mesh of a hundred servers fits several times.
const maxSnapshot = 8 << 20

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
	mux.HandleFunc("GET /route", n.serveRoute)
	mux.Handle("GET /metrics", n.metricsHandler())
	return mux
}

// serveRoute answers GET /route. With a key the answer is signed (auth.go) for the request's
// X-Zero502-Mesh-Challenge, over the exact bytes written, so lb-sync can tell it from an answer
// by whoever else holds the port or the path, and from a replay.
func (n *Node) serveRoute(w http.ResponseWriter, r *http.Request) {
	var body bytes.Buffer
	if err := json.NewEncoder(&body).Encode(n.RouteView()); err != nil {
		http.Error(w, "route: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if n.Key != nil {
		w.Header().Set(headerSignature, signRoute(n.Key, r.Header.Get(headerChallenge), body.Bytes()))
	}
	_, _ = w.Write(body.Bytes())
}

// receive records a peer's bulletin once it is authenticated (see auth.go): from a configured
// peer at its configured address, signed, fresh, not seen before, and at least half a round
// after the last one taken from that peer (one bulletin a round: a streak counts rounds). A
// server speaks only for itself: its report and every probe must be its own, each of another
// member and at most one per target (see checkProbes). What it claims as its service is
// replaced by the service configured here for it. Times are stamped on receipt. A bulletin
// refused for any reason changes nothing and is logged, naming the sender and the reason.
func (n *Node) receive(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBulletin))
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		n.refuse(w, r, r.Header.Get(headerSender), &refusal{http.StatusRequestEntityTooLarge,
			fmt.Sprintf("bulletin above %d bytes", tooLarge.Limit)})
		return
	}
	if err != nil {
		n.refuse(w, r, r.Header.Get(headerSender), &refusal{http.StatusBadRequest, fmt.Sprintf("bulletin unreadable: %v", err)})
		return
	}
	from, ts, bad := n.authenticate(r, body)
	if bad != nil {
		n.refuse(w, r, from, bad)
		return
	}
	var b Bulletin
	if err := json.Unmarshal(body, &b); err != nil {
		n.refuse(w, r, from, &refusal{http.StatusBadRequest, fmt.Sprintf("bulletin is not JSON: %v", err)})
		return
	}
	if b.Report.Server != from {
		n.refuse(w, r, from, forbidden("the report speaks for %q but the bulletin is from %q: a server reports only about itself", b.Report.Server, from))
		return
	}
	if bad := n.checkProbes(from, b.Probes); bad != nil {
		n.refuse(w, r, from, bad)
		return
	}
	now := n.Clock.Now()
	if bad := n.accept(from, ts, now); bad != nil {
		n.refuse(w, r, from, bad)
		return
	}
	if claimed, configured := b.Report.Service, n.serviceOf(from).URL; claimed != configured {
		n.Logger.Debug("bulletin's service ignored: the configured one counts", "server", n.Name, "sender", from,
			"claimed", claimed, "configured", configured)
	}
	b.Report.Service = n.serviceOf(from).URL
	n.checkRoleClaim(from, b.Report.Checker)
	b.Report.Checker = n.eval.isChecker(from)
	b.Report.At = now
	for i := range b.Probes {
		b.Probes[i].At = now
	}
	if err := n.eval.Record(b); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// checkRoleClaim logs, once per sender and claim, a bulletin whose report claims a checker role
// other than the one this server's --checkers gives the sender: the claim is not believed (a
// key holder cannot make itself a checker), and a mismatch usually means the servers were given
// different --checkers lists.
func (n *Node) checkRoleClaim(from string, claimed bool) {
	configured := n.eval.isChecker(from)
	n.authMu.Lock()
	last, logged := n.roleClaims[from]
	if claimed == configured {
		delete(n.roleClaims, from)
	} else {
		n.roleClaims[from] = claimed
	}
	n.authMu.Unlock()
	if claimed != configured && (!logged || last != claimed) {
		n.Logger.Warn("bulletin's checker role ignored: this server's --checkers decides", "server", n.Name, "sender", from,
			"claimed", claimed, "configured", configured, "checkers", n.Checkers)
	}
}

// checkProbes refuses the probes of a bulletin from sender unless each is sender's own, of
// another member of the mesh, and the only one of its target: a bulletin is one round, and every
// probe in it is stamped with the same receipt time, so a second probe of the same target would
// count as a further round and one bulletin could make a whole failure streak.
func (n *Node) checkProbes(from string, probes []Probe) *refusal {
	seen := make(map[string]bool, len(probes))
	for _, p := range probes {
		switch {
		case p.Prober != from:
			return &refusal{http.StatusBadRequest, fmt.Sprintf("bulletin from %q carries a probe by %q; a server sends only its own probes",
				from, p.Prober)}
		case p.Target == from:
			return &refusal{http.StatusBadRequest, fmt.Sprintf("bulletin from %q carries a probe of itself; a server does not probe itself", from)}
		case !n.eval.member(p.Target):
			return &refusal{http.StatusBadRequest, fmt.Sprintf("bulletin from %q carries a probe of %q, which is %v (members: %v)",
				from, p.Target, errUnknownServer, n.eval.servers)}
		case seen[p.Target]:
			return &refusal{http.StatusBadRequest, fmt.Sprintf("bulletin from %q carries more than one probe of %q; a bulletin is one round: one probe per target",
				from, p.Target)}
		}
		seen[p.Target] = true
	}
	return nil
}

// refuse answers a refused bulletin and logs it, naming the sender (as claimed) and the reason.
func (n *Node) refuse(w http.ResponseWriter, r *http.Request, sender string, why *refusal) {
	n.Logger.Warn("bulletin refused", "server", n.Name, "sender", sender, "remote", r.RemoteAddr,
		"status", why.status, "reason", why.reason)
	http.Error(w, "bulletin refused: "+why.reason, why.status)
}

// FetchSnapshot reads a node's view from GET /mesh/verdicts at addr (host:port); an answer above
// maxSnapshot bytes is an error, not read further.
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
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSnapshot+1))
	if err != nil {
		return Snapshot{}, fmt.Errorf("read verdicts from %s: %w", addr, err)
	}
	if len(body) > maxSnapshot {
		return Snapshot{}, fmt.Errorf("read verdicts from %s: answer above %d bytes: not a mesh snapshot", addr, maxSnapshot)
	}
	var s Snapshot
	if err := json.Unmarshal(body, &s); err != nil {
		return Snapshot{}, fmt.Errorf("read verdicts from %s: not a mesh snapshot: %w", addr, err)
	}
	return s, nil
}
