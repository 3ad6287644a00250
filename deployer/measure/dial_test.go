package measure

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// dnsServer answers name with ips and ttl over UDP on loopback and counts the questions it got.
func dnsServer(t *testing.T, name string, ttl uint32, ips ...string) (addr string, asked *atomic.Int64) {
	t.Helper()
	asked = new(atomic.Int64)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		asked.Add(1)
		m := new(dns.Msg)
		m.SetReply(q)
		if q.Question[0].Name == name {
			for _, ip := range ips {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl}, A: net.ParseIP(ip)})
			}
		} else {
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String(), asked
}

// The load's client resolves as a client behind a caching resolver: once per TTL, not once per
// connection (200 connections a second would be 200 questions a second, which a DNS server's
// per-source rate limit rightly drops).
func TestTheLoadAsksDNSOncePerTTL(t *testing.T) {
	addr, asked := dnsServer(t, "edge.zero502.test.", 5, "127.0.0.21", "127.0.0.22")
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	r := newDialer(addr).resolver
	r.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }

	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ips, err := r.lookup(context.Background(), "edge.zero502.test")
			if err != nil || len(ips) != 2 {
				t.Errorf("lookup: %v, %v; want both edges", ips, err)
			}
		}()
	}
	wg.Wait()
	if n := asked.Load(); n != 1 {
		t.Fatalf("50 lookups within the TTL asked the server %d times, want 1", n)
	}

	mu.Lock()
	now = now.Add(5 * time.Second)
	mu.Unlock()
	if _, err := r.lookup(context.Background(), "edge.zero502.test"); err != nil {
		t.Fatal(err)
	}
	if n := asked.Load(); n != 2 {
		t.Fatalf("a lookup after the TTL ran out asked %d times in all, want 2 (asked again)", n)
	}
}

func TestATTLOfZeroIsAskedEveryTime(t *testing.T) {
	addr, asked := dnsServer(t, "edge.zero502.test.", 0, "127.0.0.21")
	r := newDialer(addr).resolver
	for range 3 {
		if _, err := r.lookup(context.Background(), "edge.zero502.test"); err != nil {
			t.Fatal(err)
		}
	}
	if n := asked.Load(); n != 3 {
		t.Fatalf("3 lookups of a TTL-0 answer asked %d times, want 3", n)
	}
}

func TestANameWithNoRecordIsAnErrorNamingIt(t *testing.T) {
	addr, _ := dnsServer(t, "edge.zero502.test.", 5, "127.0.0.21")
	r := newDialer(addr).resolver
	_, err := r.lookup(context.Background(), "other.zero502.test")
	if err == nil {
		t.Fatal("a name the server does not know resolved")
	}
	if got := err.Error(); !strings.Contains(got, "NXDOMAIN") || !strings.Contains(got, "other.zero502.test.") {
		t.Fatalf("error %q: want the answer and the name", got)
	}
}
