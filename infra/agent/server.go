package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/backoff"
	"github.com/zero502/zero502/infra/origin"
)

// defaultHandshakeTimeout is a Server's TLS handshake bound when HandshakeTimeout is 0.
const defaultHandshakeTimeout = 10 * time.Second

func (s *Server) handshakeTimeout() time.Duration {
	if s.HandshakeTimeout > 0 {
		return s.HandshakeTimeout
	}
	return defaultHandshakeTimeout
}

// Server is the origin end of agent sessions: an echo/ack server. For every message it applies
// it once (Apply, when its id is new to the dedupStore) and acknowledges it either way, saying
// whether it was a duplicate. It accepts connections from edges (the PROXY headers of Trusted
// edges are read and logged by an origin.Listener) or directly. Without a verified client
// certificate (TLS.ClientAuth) it serves on loopback only, and with no Trusted edges.
type Server struct {
	// Listener is where agents (through the edges) connect; it is wrapped in an
	// origin.Listener and TLS, and closed when Serve returns.
	Listener net.Listener
	// TLS is the server's TLS configuration (its certificate; ClientCAs and ClientAuth to ask
	// agents for certificates).
	TLS *tls.Config
	// Dedup is the store of applied ids (required: NewDedupStore).
	Dedup *dedupStore
	// Apply, when set, is called once per new message, in arrival order per session.
	Apply func(Frame)
	// Trusted are the edges allowed to send a PROXY header (origin.Listener.Trusted); a header
	// from any other peer closes the connection. Empty: no peer is, so a header from anyone
	// closes it (unlike origin.Listener, whose empty list trusts every peer).
	Trusted []netip.Prefix
	// HandshakeTimeout bounds the TLS handshake after the PROXY sniff (defaultHandshakeTimeout
	// when 0): a client that stalls in it is closed.
	HandshakeTimeout time.Duration
	// Logger gets a line per session (with the edge's claimed and measured peer); nil is
	// slog.Default().
	Logger *slog.Logger

	mu     sync.Mutex
	counts Counts
}

// Counts are what a Server saw.
type Counts struct {
	// Sessions are connections that sent at least one frame (an edge probe only handshakes).
	Sessions   int `json:"sessions"`
	Applied    int `json:"applied"`
	Duplicates int `json:"duplicates"`
	// Refused are messages the dedupStore refused (id too long, store full): the session was
	// closed without applying or acknowledging them.
	Refused int `json:"refused"`
}

// Counts is a snapshot of the server's counts.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// Serve accepts sessions until ctx ends, then closes the listener and every open session, and
// returns nil. A failed accept is retried after a pause (backoff.AcceptPause); the listener
// closed underneath it ends Serve with an error, having closed every open session too.
func (s *Server) Serve(ctx context.Context) error {
	if s.Listener == nil || s.TLS == nil || s.Dedup == nil {
		return errors.New("agent server: Listener, TLS and Dedup are required")
	}
	if addr := s.Listener.Addr().String(); s.TLS.ClientAuth != tls.RequireAndVerifyClientCert && !adminapi.Loopback(addr) {
		return fmt.Errorf("agent server: listening on %s, not loopback, without requiring a verified client certificate: "+
			"anyone who reaches it could send messages that are applied; give a client CA (--client-ca), or listen on loopback (labs)", addr)
	}
	if s.TLS.ClientAuth != tls.RequireAndVerifyClientCert && len(s.Trusted) > 0 {
		// An edge relays anyone: through an edge on this host, a client on the internet arrives
		// from loopback, so loopback is no longer the lab it stands for.
		return fmt.Errorf("agent server: trusted edges %v without requiring a verified client certificate: "+
			"an edge relays clients from anywhere, so anyone who reaches an edge could send messages that are applied; "+
			"give a client CA (--client-ca), or no trusted edges (labs)", s.Trusted)
	}
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	ln := tls.NewListener(&origin.Listener{Listener: s.Listener, Logger: log, Trusted: s.Trusted}, s.TLS)
	ctx, cancel := context.WithCancel(ctx)
	go func() { <-ctx.Done(); ln.Close() }()
	var wg sync.WaitGroup
	// Deferred calls run last first: cancel must come before the wait, as it is what closes the
	// open sessions; the other way round, a return with a session open waits for it forever.
	defer wg.Wait()
	defer cancel()
	var pause backoff.AcceptPause
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("agent server: accept on %s: the listener was closed while serving, not by a stop; "+
					"the server stopped with it: start it again: %w", s.Listener.Addr(), err)
			}
			// Anything else leaves the listener open (out of file descriptors, a connection
			// aborted before it was accepted): wait and accept again. A stop ends the wait.
			wait := pause.Next()
			log.Warn("agent server: accept failed; retrying", "listen", s.Listener.Addr().String(), "err", err, "pause", wait.String())
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
			continue
		}
		pause.Reset()
		wg.Go(func() {
			stop := context.AfterFunc(ctx, func() { c.Close() })
			defer stop()
			s.session(c.(*tls.Conn), log)
		})
	}
}

// session serves one connection until it breaks.
func (s *Server) session(c *tls.Conn, log *slog.Logger) {
	defer c.Close()
	var peer origin.Peer
	_ = c.SetDeadline(time.Now().Add(s.handshakeTimeout()))
	if oc, ok := c.NetConn().(*origin.Conn); ok && len(s.Trusted) == 0 {
		// No trusted edges: a PROXY header is no one's to send, so it is not believed, and the
		// connection is closed as origin.Listener closes one from outside its list.
		if err := oc.Sniff(); err != nil {
			log.Warn("agent server: connection closed before the TLS handshake", "remote", c.RemoteAddr().String(), "err", err)
			return
		}
		if p := oc.Peer(); p.Header != origin.HeaderNone {
			log.Warn("agent server: PROXY header with no trusted edges (--trusted); not believed, connection closed",
				"measured", origin.LogAddr(p.Measured), "claimed", origin.LogAddr(p.Claimed), "header", string(p.Header))
			return
		}
	}
	if err := c.Handshake(); err != nil {
		log.Warn("agent server: TLS handshake failed", "remote", c.RemoteAddr().String(), "err", err)
		return
	}
	_ = c.SetDeadline(time.Time{})
	if oc, ok := c.NetConn().(*origin.Conn); ok {
		peer = oc.Peer()
	}
	var applied, dups int
	for frames := 0; ; frames++ {
		f, err := readFrame(c)
		if err != nil && frames == 0 {
			// A probe is a full handshake and nothing else (edgepick measures this way): it
			// closes, or resets, before a byte. Anything else read was not an agent's frame.
			if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, net.ErrClosed) {
				log.Warn("agent server: first frame unreadable; connection closed", "claimed", peer.Claimed.String(),
					"measured", peer.Measured.String(), "err", err.Error())
			}
			return
		}
		if frames == 0 {
			s.mu.Lock()
			s.counts.Sessions++
			s.mu.Unlock()
		}
		if err != nil {
			log.Info("agent server: session ended", "claimed", peer.Claimed.String(), "measured", peer.Measured.String(),
				"applied", applied, "duplicates", dups, "why", err.Error())
			return
		}
		if f.Kind != kindMsg {
			continue
		}
		verdict := s.Dedup.First(f.ID)
		if verdict == Refused {
			s.mu.Lock()
			s.counts.Refused++
			s.mu.Unlock()
			log.Warn("agent server: message refused, not applied nor acknowledged; the agent replays it later",
				"id_bytes", len(f.ID), "max_id_bytes", maxIDLen, "why", "id too long, or the dedup store full of ids inside the replay window (raise --dedup)")
			return
		}
		first := verdict == New
		s.mu.Lock()
		if first {
			s.counts.Applied++
			applied++
		} else {
			s.counts.Duplicates++
			dups++
		}
		s.mu.Unlock()
		if first && s.Apply != nil {
			s.Apply(f)
		}
		if err := writeFrame(c, Frame{Kind: kindAck, ID: f.ID, Dup: !first}); err != nil {
			log.Info("agent server: ack not written; the agent replays it", "id", f.ID, "err", err.Error())
			return
		}
	}
}
