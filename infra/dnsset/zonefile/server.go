package zonefile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/zero502/zero502/infra/trust"
)

// Server answers DNS queries authoritatively (AA set) from a zone file:
//
//   - a name in the zone with records of the asked type: those records, TTLs from the file;
//   - a name in the zone without them: NOERROR and no answer (NODATA), the SOA in authority;
//   - a name under the apex that does not exist: NXDOMAIN, the SOA in authority (negative TTL
//     min(SOA TTL, SOA minimum), RFC 2308);
//   - a name outside the zone: REFUSED (it is not a resolver and never recurses);
//   - an opcode other than QUERY: NOTIMP; not exactly one question: FORMERR;
//   - ANY for a name with records: one HINFO "RFC8482" record (RFC 8482), never the whole set.
//
// It matches owner names exactly: no wildcard expansion, no referrals. A file holding a wildcard
// owner or an NS record below the apex does not load (Parse refuses it), rather than be answered
// wrongly (NXDOMAIN for the wildcard's names, the delegation as this zone's data).
//
// Over UDP each source address gets at most Rate answers a second (Burst at once); a query
// beyond that is dropped unanswered and counted (Limited).
//
// It checks the file on every query (inode, size, mtime) and reloads it when it changed, so a
// Set change is visible at the next query. A file that fails to parse, or that another user
// could have written (Load refuses it by the trust rule), is logged and the last good zone keeps
// being served; with no good zone yet, queries get SERVFAIL. Nothing of a refused file is ever
// answered.
type Server struct {
	path string
	log  *slog.Logger
	// Rate and Burst are the per-source UDP limits (defaultRate, defaultBurst when 0); set them
	// before Listen.
	Rate, Burst int

	limitOnce sync.Once
	limit     *limiter
	limited   atomic.Uint64

	mu    sync.Mutex
	zone  *Zone
	stamp fileStamp
	bad   fileStamp // the stamp of a file that failed to parse, so it is logged once
	// refused is the stamp of a file the trust rule refused, so it is logged once (it is judged
	// again at each query: what fixes it changes no stamp).
	refused fileStamp
}

type fileStamp struct {
	info os.FileInfo
}

func (a fileStamp) same(b fileStamp) bool {
	if a.info == nil || b.info == nil {
		return a.info == nil && b.info == nil
	}
	return os.SameFile(a.info, b.info) && a.info.Size() == b.info.Size() && a.info.ModTime().Equal(b.info.ModTime())
}

// NewServer serves the zone file at path; log gets reloads and parse failures. The file is
// read at the first query.
func NewServer(path string, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{path: path, log: log}
}

// current returns the newest good zone, reloading the file when its stamp changed. A file that
// does not parse is not read again until it changes; one the trust rule refuses is judged again
// at every query until it loads (fixing its owner or mode, or its directory's, changes no stamp).
func (s *Server) current() (*Zone, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	info, err := os.Stat(s.path)
	if err != nil {
		if s.zone != nil {
			return s.zone, nil
		}
		return nil, fmt.Errorf("zone file: %w", err)
	}
	st := fileStamp{info}
	if s.zone != nil && st.same(s.stamp) {
		return s.zone, nil
	}
	if st.same(s.bad) {
		if s.zone != nil {
			return s.zone, nil
		}
		return nil, fmt.Errorf("zone file %s does not parse", s.path)
	}
	z, err := Load(s.path)
	if err != nil {
		refused := errors.Is(err, trust.ErrRefused)
		logged := refused && st.same(s.refused)
		if refused {
			s.refused = st // logged once for this file, judged again at the next query
		} else {
			s.bad = st
		}
		if s.zone != nil {
			if !logged {
				s.log.Error("zone file changed but cannot be loaded; serving the last good zone", "err", err,
					"serial", s.zone.SOA().Serial)
			}
			return s.zone, nil
		}
		if !logged {
			s.log.Error("zone file cannot be loaded; answering SERVFAIL until it can", "err", err)
		}
		return nil, err
	}
	s.zone, s.stamp, s.refused = z, st, fileStamp{}
	s.log.Info("zone loaded", "file", s.path, "origin", z.Origin, "serial", z.SOA().Serial, "records", len(z.Records))
	return z, nil
}

// ServeDNS answers one query (dns.Handler).
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	size := dns.MaxMsgSize
	if ua, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		if !s.limiter().allow(ua.AddrPort().Addr().Unmap(), time.Now()) {
			s.limited.Add(1)
			s.log.Debug("DNS answer dropped: source over its rate", "from", ua.String())
			return
		}
		size = dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = max(int(opt.UDPSize()), dns.MinMsgSize)
		}
	}
	resp := s.Answer(req)
	resp.Truncate(size)
	if err := w.WriteMsg(resp); err != nil {
		s.log.Debug("writing DNS answer", "to", w.RemoteAddr(), "err", err)
	}
}

// Limited is how many UDP queries were dropped because their source was over its rate.
func (s *Server) Limited() uint64 { return s.limited.Load() }

func (s *Server) limiter() *limiter {
	s.limitOnce.Do(func() {
		rate, burst := s.Rate, s.Burst
		if rate <= 0 {
			rate = defaultRate
		}
		if burst <= 0 {
			burst = defaultBurst
		}
		s.limit = newLimiter(rate, burst)
	})
	return s.limit
}

// Answer builds the response to req from the zone's newest content.
func (s *Server) Answer(req *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(req)
	if opt := req.IsEdns0(); opt != nil {
		m.SetEdns0(max(opt.UDPSize(), dns.MinMsgSize), false)
	}
	if req.Opcode != dns.OpcodeQuery {
		m.Rcode = dns.RcodeNotImplemented
		return m
	}
	if len(req.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		return m
	}
	q := req.Question[0]
	name := dns.CanonicalName(q.Name)
	z, err := s.current()
	if err != nil {
		m.Rcode = dns.RcodeServerFailure
		return m
	}
	if !dns.IsSubDomain(z.Origin, name) || (q.Qclass != dns.ClassINET && q.Qclass != dns.ClassANY) {
		m.Rcode = dns.RcodeRefused
		return m
	}
	m.Authoritative = true
	var atName, cname []dns.RR
	exists := false
	for _, rr := range z.Records {
		owner := rr.Header().Name
		if owner != name {
			if dns.IsSubDomain(name, owner) {
				exists = true // an empty non-terminal: the name exists, with no records
			}
			continue
		}
		exists = true
		switch {
		case q.Qtype == dns.TypeANY || rr.Header().Rrtype == q.Qtype:
			atName = append(atName, dns.Copy(rr))
		case rr.Header().Rrtype == dns.TypeCNAME:
			cname = append(cname, dns.Copy(rr))
		}
	}
	switch {
	case len(atName) > 0 && q.Qtype == dns.TypeANY:
		m.Answer = []dns.RR{&dns.HINFO{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeHINFO, Class: dns.ClassINET,
			Ttl: atName[0].Header().Ttl}, Cpu: "RFC8482"}}
	case len(atName) > 0:
		m.Answer = atName
	case len(cname) > 0:
		m.Answer = cname
	default:
		if !exists {
			m.Rcode = dns.RcodeNameError
		}
		soa := dns.Copy(z.SOA()).(*dns.SOA)
		soa.Hdr.Ttl = min(soa.Hdr.Ttl, soa.Minttl)
		m.Ns = []dns.RR{soa}
	}
	return m
}

// Listener is a Server bound to one address on UDP and TCP.
type Listener struct {
	Addr string // host:port, the same port on UDP and TCP
	udp  *dns.Server
	tcp  *dns.Server
	done chan error
}

// Listen binds addr (host:port; port 0 picks one free on both UDP and TCP) and starts serving.
// Stop with Shutdown.
func (s *Server) Listen(addr string) (*Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w (want host:port, e.g. 127.0.0.1:5353)", addr, err)
	}
	var pc net.PacketConn
	var ln net.Listener
	for attempt := 0; ; attempt++ {
		pc, err = net.ListenPacket("udp", net.JoinHostPort(host, port))
		if err != nil {
			return nil, fmt.Errorf("DNS listen udp %s: %w", addr, err)
		}
		udpPort := strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)
		ln, err = net.Listen("tcp", net.JoinHostPort(host, udpPort))
		if err == nil {
			break
		}
		pc.Close()
		if port != "0" || attempt == 10 { // a picked port may be taken on TCP: pick again
			return nil, fmt.Errorf("DNS listen tcp %s: %w", net.JoinHostPort(host, udpPort), err)
		}
	}
	started := make(chan struct{}, 2)
	up := func() { started <- struct{}{} }
	l := &Listener{
		Addr: ln.Addr().String(),
		udp:  &dns.Server{PacketConn: pc, Handler: s, NotifyStartedFunc: up},
		tcp:  &dns.Server{Listener: ln, Handler: s, NotifyStartedFunc: up},
		done: make(chan error, 2),
	}
	for _, srv := range []*dns.Server{l.udp, l.tcp} {
		go func() { l.done <- srv.ActivateAndServe() }()
	}
	for range 2 {
		select {
		case <-started:
		case err := <-l.done: // it failed before serving
			pc.Close()
			ln.Close()
			return nil, fmt.Errorf("DNS serve %s: %w", l.Addr, err)
		}
	}
	return l, nil
}

// Shutdown stops both listeners and waits for them (at most until ctx ends).
func (l *Listener) Shutdown(ctx context.Context) error {
	var errs []error
	for _, srv := range []*dns.Server{l.udp, l.tcp} {
		if err := srv.ShutdownContext(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for range 2 {
		select {
		case err := <-l.done:
			if err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		case <-ctx.Done():
			return errors.Join(append(errs, ctx.Err())...)
		}
	}
	return errors.Join(errs...)
}
