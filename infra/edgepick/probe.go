package edgepick

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"
)

// DefaultBudget is a probe's budget when none is given: connect plus full handshake must finish
// within it.
const DefaultBudget = 3 * time.Second

// Measurement is one probe of one edge: two numbers from one socket.
type Measurement struct {
	// Addr is the edge probed.
	Addr netip.AddrPort
	// Connect is the TCP connect time: the round trip to the edge itself.
	Connect time.Duration
	// Handshake is the full TLS handshake time, from the end of the connect to the handshake's
	// end: through the edge's tunnel to the origin and back. Health and ranking depend on it.
	Handshake time.Duration
	// Err is why the probe failed (nil: healthy). A probe whose connect succeeded and whose
	// handshake failed has Connect set and Err non-nil: an edge that accepts and forwards nothing.
	Err error
}

// Healthy reports whether the full handshake finished.
func (m Measurement) Healthy() bool { return m.Err == nil }

// probeFunc probes one edge. TLSProbe is the real one; tests give scripted results.
type probeFunc func(ctx context.Context, addr netip.AddrPort) Measurement

// TLSProbe is the probeFunc that runs Probe with conf and budget.
func TLSProbe(conf *tls.Config, budget time.Duration) probeFunc {
	return func(ctx context.Context, addr netip.AddrPort) Measurement {
		return Probe(ctx, addr, conf, budget)
	}
}

// Probe measures one edge with a full TLS handshake, not a TCP connect: a forwarder whose origin
// is unreachable still accepts connections, so only a handshake that travels to the origin and
// back says the edge works. It returns the TCP connect time and the handshake time from the same
// socket. budget (DefaultBudget when 0 or less) bounds connect and handshake together, so a silent
// edge that accepts and then says nothing fails within it. The connection is closed before Probe
// returns; no application data is sent.
func Probe(ctx context.Context, addr netip.AddrPort, conf *tls.Config, budget time.Duration) Measurement {
	if budget <= 0 {
		budget = DefaultBudget
	}
	m := Measurement{Addr: addr}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()

	start := time.Now()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr.String())
	if err != nil {
		m.Err = fmt.Errorf("edge %s: TCP connect: %w", addr, err)
		return m
	}
	defer raw.Close()
	m.Connect = time.Since(start)
	if deadline, ok := ctx.Deadline(); ok {
		_ = raw.SetDeadline(deadline)
	}

	if conf == nil {
		conf = &tls.Config{}
	}
	tc := tls.Client(raw, conf)
	hs := time.Now()
	if err := tc.HandshakeContext(ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
			m.Err = fmt.Errorf("edge %s: TCP connect took %s but the TLS handshake did not finish within the %s budget: "+
				"the edge accepts and forwards nothing, or the origin behind it does not answer: %w",
				addr, m.Connect.Round(time.Microsecond), budget, err)
		} else {
			m.Err = fmt.Errorf("edge %s: TLS handshake after a %s connect: %w", addr, m.Connect.Round(time.Microsecond), err)
		}
		return m
	}
	m.Handshake = time.Since(hs)
	_ = tc.Close()
	return m
}

// measurementJSON is a Measurement in the state file and in --json output: durations as Go
// duration strings ("12.3ms"), the error as its message.
type measurementJSON struct {
	Addr      netip.AddrPort `json:"addr"`
	Connect   string         `json:"connect,omitempty"`
	Handshake string         `json:"handshake,omitempty"`
	Error     string         `json:"error,omitempty"`
}

// MarshalJSON writes durations as duration strings and the error as its message.
func (m Measurement) MarshalJSON() ([]byte, error) {
	j := measurementJSON{Addr: m.Addr}
	if m.Connect > 0 {
		j.Connect = m.Connect.String()
	}
	if m.Handshake > 0 {
		j.Handshake = m.Handshake.String()
	}
	if m.Err != nil {
		j.Error = m.Err.Error()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote; the error comes back as a plain error with the
// same message.
func (m *Measurement) UnmarshalJSON(data []byte) error {
	var j measurementJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*m = Measurement{Addr: j.Addr}
	var err error
	if j.Connect != "" {
		if m.Connect, err = time.ParseDuration(j.Connect); err != nil {
			return fmt.Errorf("edge %s: connect %q: %w", j.Addr, j.Connect, err)
		}
	}
	if j.Handshake != "" {
		if m.Handshake, err = time.ParseDuration(j.Handshake); err != nil {
			return fmt.Errorf("edge %s: handshake %q: %w", j.Addr, j.Handshake, err)
		}
	}
	if j.Error != "" {
		m.Err = errors.New(j.Error)
	}
	return nil
}
