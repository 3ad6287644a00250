package mesh

import (
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

// fetchRoute reads GET /route from a mesh node at base (http://host:port).
func fetchRoute(client *http.Client, base string) (RouteView, error) {
	resp, err := client.Get(base + "/route")
	if err != nil {
		return RouteView{}, fmt.Errorf("read the route from %s: %w; is `zero502 mesh serve` listening there?", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return RouteView{}, fmt.Errorf("read the route from %s: answered %d: %s", base, resp.StatusCode, msg)
	}
	var rv RouteView
	if err := json.NewDecoder(resp.Body).Decode(&rv); err != nil {
		return RouteView{}, fmt.Errorf("read the route from %s: not a mesh route: %w", base, err)
	}
	return rv, nil
}
