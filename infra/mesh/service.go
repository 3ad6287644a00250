package mesh

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Service is the real service a server runs and its users reach (in the write-up, the VPN's
// traffic listener on 443), as a URL: tcp://host:port (a connect), tls://host:port (a full TLS
// handshake), http(s)://host:port/path (a GET answering 2xx or 3xx). The self-report checks it;
// the other servers probe it the way a user's app would, not the mesh's own HTTP port, so a
// server whose service port alone is blocked is found.
type Service struct {
	URL    string
	scheme string
	addr   string
}

// ParseService reads a --service value; the error names the flag, the value and the rule. The
// port must be a number from 1 to 65535, and the URL must hold no credentials (user:password@):
// the value is in the command line and is shown in logs, alerts, /mesh/verdicts and bulletins.
// An error shows the value with any credentials masked.
func ParseService(flag, raw string) (Service, error) {
	bad := func(why string) (Service, error) {
		return Service{}, fmt.Errorf("--%s %q: %s; write tcp://host:port, tls://host:port or http(s)://host:port/path, e.g. tls://203.0.113.7:443",
			flag, maskUserinfo(raw), why)
	}
	u, err := url.Parse(raw)
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return bad(ue.Err.Error()) // not ue itself: it quotes raw, credentials and all
	}
	if err != nil {
		return bad(err.Error())
	}
	switch u.Scheme {
	case "tcp", "tls", "http", "https":
	default:
		return bad(fmt.Sprintf("scheme %q is not tcp, tls, http or https", u.Scheme))
	}
	if u.User != nil {
		return bad(fmt.Sprintf("it holds credentials (user:password@), and secrets do not belong in --%s: the value is in the command line "+
			"and is shown in logs, alerts, /mesh/verdicts and bulletins; give a health path that needs none (or check it with --check-command)", flag))
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" || port == "" {
		return bad("it needs a host and a port")
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return bad(fmt.Sprintf("port %q is not a number from 1 to 65535", port))
	}
	return Service{URL: raw, scheme: u.Scheme, addr: u.Host}, nil
}

// maskUserinfo is raw with whatever stands before an "@" in its authority replaced by "xxxxx",
// for errors: "http://user:secret@host/h" is shown "http://xxxxx@host/h".
func maskUserinfo(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return raw
	}
	return scheme + "://xxxxx" + rest[at:]
}

// Addr is the service's host:port (what a balancer puts in rotation).
func (s Service) Addr() string { return s.addr }

// IsZero reports whether no service is configured.
func (s Service) IsZero() bool { return s.URL == "" }

// Check reaches the service once from source (the zero Addr: any local address), within
// timeout, and returns how long it took and why it failed.
func (s Service) Check(ctx context.Context, source netip.Addr, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := &net.Dialer{}
	if source.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: source.AsSlice()}
	}
	start := time.Now()
	switch s.scheme {
	case "tcp", "tls":
		c, err := d.DialContext(ctx, "tcp", s.addr)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", s.URL, err)
		}
		defer c.Close()
		if s.scheme == "tls" {
			host, _, _ := net.SplitHostPort(s.addr)
			// Reachability, not identity: a user's app finishes the handshake; whose certificate
			// it is the app's business.
			tc := tls.Client(c, &tls.Config{ServerName: host, InsecureSkipVerify: true}) //nolint:gosec
			if err := tc.HandshakeContext(ctx); err != nil {
				return 0, fmt.Errorf("%s: TLS handshake: %w", s.URL, err)
			}
		}
		return time.Since(start), nil
	}
	tr := &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true, Proxy: nil,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", s.URL, err)
	}
	req.Header.Set("User-Agent", "zero502-mesh-probe")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", s.URL, trimURLError(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return 0, fmt.Errorf("%s answered %d", s.URL, resp.StatusCode)
	}
	return time.Since(start), nil
}

func trimURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	if strings.Contains(err.Error(), "EOF") {
		return fmt.Errorf("connection closed without an answer (%w)", err)
	}
	return err
}
