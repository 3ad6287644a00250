package zonefile_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/miekg/dns"

	"github.com/zero502/zero502/infra/dnsset/zonefile"
)

// BenchmarkAnswer is one query answered in process, with the stat of the file that makes a
// change visible at the next query.
func BenchmarkAnswer(b *testing.B) {
	path := benchZone(b)
	srv := zonefile.NewServer(path, nil)
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	for b.Loop() {
		if r := srv.Answer(q); len(r.Answer) != 8 {
			b.Fatalf("%d answers", len(r.Answer))
		}
	}
}

// BenchmarkQueryUDP is one query over loopback UDP, client included.
func BenchmarkQueryUDP(b *testing.B) {
	path := benchZone(b)
	srv := zonefile.NewServer(path, nil)
	srv.Rate, srv.Burst = 1<<30, 1<<30 // one source asking as fast as it can is what the limit stops
	l, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Shutdown(context.Background()) })
	c := &dns.Client{Net: "udp"}
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	for b.Loop() {
		if r, _, err := c.Exchange(q, l.Addr); err != nil || len(r.Answer) != 8 {
			b.Fatalf("%v %v", r, err)
		}
	}
}

func benchZone(b *testing.B) string {
	path := b.TempDir() + "/edge.zone"
	s, err := zonefile.NewSet(path, name, zonefile.Options{Origin: "example.test"})
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; i <= 8; i++ {
		if err := s.Add(context.Background(), netip.AddrFrom4([4]byte{192, 0, 2, byte(i)})); err != nil {
			b.Fatal(err)
		}
	}
	return path
}
