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
	// Addresses are the servers in rotation, in the route's order: what a balancer serves.
	Addresses []string     `json:"addresses"`
	Servers   []RouteEntry `json:"servers"`
	// Fallback is true when every server was out and the best of them were kept (never empty).
	Fallback bool   `json:"fallback"`
	Reason   string `json:"reason"`
}

// RouteEntry is one server of the route.
type RouteEntry struct {
	Server  string `json:"server"`
	Address string `json:"address"`
	In      bool   `json:"in"`
	Why     string `json:"why"`
}

// RouteView is the node's route as GET /route answers it. A server's address is its service's
// host:port, or its mesh address when it advertised no service.
func (n *Node) RouteView() RouteView {
	s := n.Snapshot()
	rv := RouteView{At: s.At, Fallback: s.Route.Fallback, Reason: s.Route.Reason, Addresses: []string{}}
	addr := func(v Verdict) string {
		if v.Service != "" {
			if svc, err := ParseService("service", v.Service); err == nil {
				return svc.Addr()
			}
		}
		if v.Server == n.Name {
			return n.Addr()
		}
		return n.Peers[v.Server]
	}
	by := map[string]Verdict{}
	for _, v := range s.Verdicts {
		by[v.Server] = v
	}
	for _, name := range s.Route.Servers {
		rv.Addresses = append(rv.Addresses, addr(by[name]))
	}
	for _, v := range s.Verdicts {
		e := RouteEntry{Server: v.Server, Address: addr(v), In: slices.Contains(s.Route.Servers, v.Server), Why: v.Reason}
		if e.In && !v.InRotation {
			e.Why = "kept although down: never an empty route; " + v.Reason
		}
		rv.Servers = append(rv.Servers, e)
	}
	return rv
}

// FetchRoute reads GET /route from a mesh node at base (http://host:port).
func FetchRoute(client *http.Client, base string) (RouteView, error) {
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
