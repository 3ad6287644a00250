package zonefile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/zero502/zero502/infra/dnsset/zonefile"
)

// ANY is answered minimally (RFC 8482): one HINFO "RFC8482", over UDP and TCP, however many
// records the name has; a name without records still gets NXDOMAIN.
func TestANYIsAnsweredWithOneHINFO(t *testing.T) {
	ctx := context.Background()
	s, path := newSet(t, 30*time.Second)
	for i := 1; i <= 40; i++ {
		if err := s.Add(ctx, addrs(fmt.Sprintf("192.0.2.%d", i))[0]); err != nil {
			t.Fatal(err)
		}
	}
	srv := serve(t, path)
	for _, netw := range []string{"udp", "tcp"} {
		r := query(t, netw, srv, name, dns.TypeANY)
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			t.Fatalf("%s ANY: rcode %s, %d answers, want NOERROR and 1", netw, dns.RcodeToString[r.Rcode], len(r.Answer))
		}
		if h, ok := r.Answer[0].(*dns.HINFO); !ok || h.Cpu != "RFC8482" {
			t.Fatalf("%s ANY answer %v, want HINFO \"RFC8482\"", netw, r.Answer[0])
		}
	}
	if r := query(t, "udp", srv, "nothere.example.test.", dns.TypeANY); r.Rcode != dns.RcodeNameError {
		t.Fatalf("ANY for a missing name: %s, want NXDOMAIN", dns.RcodeToString[r.Rcode])
	}
}

// Over UDP a source gets Burst answers at once, then Rate a second: the queries beyond are
// dropped unanswered and counted; TCP is not limited.
func TestUDPAnswersAreRateLimitedPerSource(t *testing.T) {
	ctx := context.Background()
	s, path := newSet(t, 30*time.Second)
	if err := s.Add(ctx, addrs("192.0.2.1")[0]); err != nil {
		t.Fatal(err)
	}
	zs := zonefile.NewServer(path, nil)
	zs.Rate, zs.Burst = 1, 5
	l, err := zs.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Shutdown(context.Background()) })
	answered := 0
	c := &dns.Client{Net: "udp", Timeout: 150 * time.Millisecond}
	for range 20 {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		if _, _, err := c.Exchange(m, l.Addr); err == nil {
			answered++
		}
	}
	// 20 queries in about 15 × 150ms of timeouts: the burst of 5 and a token a second, ~2-3 more
	if answered < 5 || answered > 9 {
		t.Fatalf("%d of 20 UDP queries answered, want the burst of 5 and about one a second more", answered)
	}
	if got := zs.Limited(); got != uint64(20-answered) {
		t.Fatalf("Limited %d, want %d", got, 20-answered)
	}
	if r := query(t, "tcp", l.Addr, name, dns.TypeA); r.Rcode != dns.RcodeSuccess {
		t.Fatalf("TCP while UDP is limited: %s", dns.RcodeToString[r.Rcode])
	}
}
