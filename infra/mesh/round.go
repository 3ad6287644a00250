package mesh

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
)

// round is one tick of a Node: probe every peer, check itself, record the bulletin, post it to
// every peer, log verdict changes.
func (n *Node) round(ctx context.Context) {
	peers := slices.Sorted(maps.Keys(n.Peers))
	probes := make([]Probe, len(peers))
	var wg sync.WaitGroup
	for i, peer := range peers {
		wg.Go(func() {
			p := Probe{Prober: n.Name, Target: peer, OK: true}
			if err := n.prober.Probe(ctx, n.Peers[peer]); err != nil {
				p.OK, p.Err = false, err.Error()
			}
			probes[i] = p
		})
	}
	report := n.selfCheck(ctx)
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	b := Bulletin{Report: report, Probes: probes}
	if err := n.eval.Record(b); err != nil {
		n.Logger.Warn("own bulletin refused", "server", n.Name, "err", err.Error())
	}
	body, err := json.Marshal(b)
	if err != nil {
		n.Logger.Error("bulletin not encodable", "server", n.Name, "err", err.Error())
		return
	}
	for _, peer := range peers {
		wg.Go(func() {
			if err := n.post(ctx, n.Peers[peer], body); err != nil && ctx.Err() == nil {
				n.Logger.Debug("bulletin not delivered", "server", n.Name, "peer", peer, "err", err.Error())
			}
		})
	}
	wg.Wait()
	n.logChanges()
}

// selfCheck is the node's report about itself: does its own listener accept a connection.
func (n *Node) selfCheck(ctx context.Context) Report {
	r := Report{Server: n.Name, Healthy: true, Checker: n.Checker}
	d := net.Dialer{Timeout: n.ProbeTimeout}
	conn, err := d.DialContext(ctx, "tcp", n.Addr())
	if err != nil {
		r.Healthy, r.Detail = false, fmt.Sprintf("own listener %s: %v", n.Addr(), err)
		return r
	}
	conn.Close()
	return r
}

func (n *Node) post(ctx context.Context, addr string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/mesh/bulletin", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("POST /mesh/bulletin to %s answered %d: %s", addr, resp.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}

// logChanges logs every verdict whose state changed since the last round, and warns for every
// server a checker finds blocked (in the write-up, the owner gets an email suggesting a new IP).
func (n *Node) logChanges() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, v := range n.eval.Verdicts() {
		was, seen := n.last[v.Server]
		n.last[v.Server] = v.State
		if seen && was == v.State {
			continue
		}
		level := n.Logger.Info
		if v.State == Down {
			level = n.Logger.Warn
		}
		level("verdict", "server", n.Name, "target", v.Server, "from", string(was), "to", string(v.State),
			"in_rotation", v.InRotation, "failing", v.Failing, "reason", v.Reason)
		if v.BlockedBy != "" {
			n.Logger.Warn("address likely blocked; consider changing its IP", "server", n.Name, "target", v.Server, "checker", v.BlockedBy)
		}
	}
}
