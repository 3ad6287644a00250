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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/boundedcmd"
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
			if err := n.probePeer(ctx, peer); err != nil {
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
	ts := n.Clock.Now().UnixNano()
	for _, peer := range peers {
		wg.Go(func() {
			if err := n.post(ctx, peer, ts, body); err != nil && ctx.Err() == nil {
				n.Logger.Debug("bulletin not delivered", "server", n.Name, "peer", peer, "err", err.Error())
			}
		})
	}
	wg.Wait()
	n.logChanges()
	n.alertChanges()
}

// probePeer reaches peer the way a user's app would: its service as configured here
// (PeerServices), or, without one, the mesh's /health at its configured address. Nothing a
// bulletin says changes what is probed.
func (n *Node) probePeer(ctx context.Context, peer string) error {
	if svc := n.PeerServices[peer]; !svc.IsZero() {
		_, err := svc.Check(ctx, n.Source, n.ProbeTimeout)
		return err
	}
	return n.prober.Probe(ctx, n.Peers[peer])
}

// selfCheck is the node's report about itself: is its service reachable and is the check
// command happy (without a service: does its own listener accept a connection), with its
// metrics.
func (n *Node) selfCheck(ctx context.Context) Report {
	r := Report{Server: n.Name, Healthy: true, Checker: n.eval.isChecker(n.Name)}
	if !n.Service.IsZero() {
		r.Service = n.Service.URL
		latency, err := n.Service.Check(ctx, n.Source, n.ProbeTimeout)
		if err != nil {
			r.Healthy, r.Detail = false, "own service: "+err.Error()
		}
		_, port, _ := net.SplitHostPort(n.Service.Addr())
		p, _ := strconv.Atoi(port)
		r.Metrics = collectMetrics(p, latency)
	}
	if n.CheckCommand != "" && r.Healthy {
		if err := runCheck(ctx, n.CheckCommand, n.ProbeTimeout); err != nil {
			r.Healthy, r.Detail = false, err.Error()
		}
	}
	if !n.Service.IsZero() || !r.Healthy {
		return r
	}
	d := net.Dialer{Timeout: n.ProbeTimeout}
	conn, err := d.DialContext(ctx, "tcp", n.Addr())
	if err != nil {
		r.Healthy, r.Detail = false, fmt.Sprintf("own listener %s: %v", n.Addr(), err)
		return r
	}
	conn.Close()
	return r
}

// post sends the bulletin body, stamped ts, to peer, signed for it.
func (n *Node) post(ctx context.Context, peer string, ts int64, body []byte) error {
	addr := n.Peers[peer]
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/mesh/bulletin", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	signRequest(req, n.Key, n.Name, peer, ts, body)
	resp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		// Not a network blip: the peer does not take this server's bulletins (another key, this
		// server missing from its --peers, or sending from an address it does not expect).
		n.Logger.Warn("bulletin refused by peer", "server", n.Name, "peer", peer, "status", resp.StatusCode,
			"reason", string(bytes.TrimSpace(msg)))
	}
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

// runCheck runs the local check command: exit 0 is running. It is held to the trust rule and
// runs without the mesh's secrets (boundedcmd.ShellCommand): a refused command is not run, and the
// check fails with the refusal.
func runCheck(ctx context.Context, command string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd, err := boundedcmd.ShellCommand(ctx, "--check-command", command)
	if err != nil {
		return fmt.Errorf("check command not run: %w", err)
	}
	boundedcmd.Bound(cmd) // the round does not wait on a child it left
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("check command %q: %w: %s", command, err, strings.TrimSpace(string(out)))
	}
	return nil
}
