package mesh

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// RouteView is the answer of GET /route: the current rotation, never empty, with every server,
// the address its users (and a balancer) reach it at, and why it is in or out.
type RouteView struct {
	At time.Time `json:"at"`
	// Ready is true once the route rests on reports really exchanged: this server's own and at
	// least one peer's. Before that a balancer must take nothing from it (lb-sync waits).
	Ready bool `json:"ready"`
	// Addresses are the services of the servers in rotation, in the route's order: what a
	// balancer serves. A server without a configured service has none and is not listed.
	Addresses []string     `json:"addresses"`
	Servers   []routeEntry `json:"servers"`
	// Fallback is true when every server was out and the best of them were kept (never empty).
	Fallback bool   `json:"fallback"`
	Reason   string `json:"reason"`
}

// routeEntry is one server of the route.
type routeEntry struct {
	Server string `json:"server"`
	// Address is the server's service host:port as configured on this server (--service,
	// --peer-service), never what a bulletin claims; empty when it has none.
	Address string `json:"address,omitempty"`
	// Mesh is the server's mesh listener, for people: never a balancer's backend.
	Mesh string `json:"mesh"`
	In   bool   `json:"in"`
	Why  string `json:"why"`
}

// RouteView is the node's route as GET /route answers it. Every address is a service from this
// server's configuration; a server without one has no address (its mesh listener is not a
// service).
func (n *Node) RouteView() RouteView {
	s := n.Snapshot()
	rv := RouteView{At: s.At, Fallback: s.Route.Fallback, Reason: s.Route.Reason, Addresses: []string{}}
	mesh := func(server string) string {
		if server == n.Name {
			return n.Addr()
		}
		return n.Peers[server]
	}
	by := map[string]Verdict{}
	ownReport, peerReport := false, false
	for _, v := range s.Verdicts {
		by[v.Server] = v
		if !v.LastReport.IsZero() {
			ownReport = ownReport || v.Server == n.Name
			peerReport = peerReport || v.Server != n.Name
		}
	}
	rv.Ready = ownReport && peerReport
	for _, name := range s.Route.Servers {
		if a := n.serviceOf(name).Addr(); a != "" {
			rv.Addresses = append(rv.Addresses, a)
		}
	}
	for _, v := range s.Verdicts {
		e := routeEntry{Server: v.Server, Address: n.serviceOf(v.Server).Addr(), Mesh: mesh(v.Server),
			In: slices.Contains(s.Route.Servers, v.Server), Why: v.Reason}
		if e.In && !v.InRotation {
			e.Why = "kept although down: never an empty route; " + v.Reason
		}
		rv.Servers = append(rv.Servers, e)
	}
	return rv
}

// maxRoute bounds a GET /route answer's body: a route of hundreds of servers fits many times.
const maxRoute = 1 << 20

// readRoute reads GET /route from a mesh node at base (http://host:port). With a key it sends a
// fresh random challenge and takes the answer only signed with the key for that challenge
// (auth.go): an unsigned answer, a bad signature or a signature for another challenge (a
// replay) is an error. Without a key the answer is taken as it is: only for a mesh on loopback
// (LBSync.Validate).
func readRoute(ctx context.Context, client *http.Client, base string, key []byte) (RouteView, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/route", nil)
	if err != nil {
		return RouteView{}, fmt.Errorf("read the route from %s: %w", base, err)
	}
	var challenge string
	if key != nil {
		challenge = newChallenge()
		req.Header.Set(headerChallenge, challenge)
	}
	resp, err := client.Do(req)
	if err != nil {
		return RouteView{}, fmt.Errorf("read the route from %s: %w; is `zero502 mesh serve` listening there?", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return RouteView{}, fmt.Errorf("read the route from %s: answered %d: %s", base, resp.StatusCode, msg)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRoute+1))
	if err != nil {
		return RouteView{}, fmt.Errorf("read the route from %s: %w", base, err)
	}
	if len(body) > maxRoute {
		return RouteView{}, fmt.Errorf("read the route from %s: answer above %d bytes: not a mesh route", base, maxRoute)
	}
	if key != nil {
		switch signed, valid := signatureValid(resp.Header.Get(headerSignature), signRoute(key, challenge, body)); {
		case !signed:
			return RouteView{}, fmt.Errorf("the route from %s is not signed (no %s %s...), so it was not taken: "+
				"either what answers there is not the mesh node, or the node has no key: give `mesh serve` and lb-sync the same --key-file (or $ZERO502_MESH_KEY)",
				base, headerSignature, signatureScheme)
		case !valid:
			return RouteView{}, fmt.Errorf("the route from %s has a bad signature (not signed with this key for this request's challenge: "+
				"forged, replayed, or another key), so it was not taken: give `mesh serve` and lb-sync the same --key-file (or $ZERO502_MESH_KEY)",
				base)
		}
	}
	var rv RouteView
	if err := json.Unmarshal(body, &rv); err != nil {
		return RouteView{}, fmt.Errorf("read the route from %s: not a mesh route: %w", base, err)
	}
	return rv, nil
}

// newChallenge is a GET /route challenge: 16 bytes from crypto/rand, in hex.
func newChallenge() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
