package lb

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"
)

// fakeDNS answers A queries for every name with the addresses in ips at the time of the query
// (a UDP server on 127.0.0.1; any other type gets no answer), and installs itself as
// net.DefaultResolver until the test ends: the resolver of the health checks, of the goroutine
// path's dial and of any lookup the LB makes.
func fakeDNS(t *testing.T, ips *atomic.Pointer[[]net.IP]) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		m.Authoritative = true
		if len(q.Question) == 1 && q.Question[0].Qtype == dns.TypeA {
			for _, ip := range *ips.Load() {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET}, A: ip.To4()})
			}
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	old := net.DefaultResolver
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
	t.Cleanup(func() { net.DefaultResolver = old })
}
