package zonefile_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/zero502/zero502/infra/dnsset"
	"github.com/zero502/zero502/infra/dnsset/zonefile"
)

const name = "edge.example.test."

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// serve starts a Server on loopback for the zone file at path.
func serve(t *testing.T, path string) string {
	t.Helper()
	l, err := zonefile.NewServer(path, nil).Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return l.Addr
}

// query asks addr over net ("udp" or "tcp") for qname/qtype.
func query(t *testing.T, netw, addr, qname string, qtype uint16) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: netw, Timeout: 5 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(qname, qtype)
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s query %s %s: %v", netw, qname, dns.TypeToString[qtype], err)
	}
	return r
}

func answerAddrs(m *dns.Msg) []netip.Addr {
	var out []netip.Addr
	for _, rr := range m.Answer {
		if a, ok := rr.(*dns.A); ok {
			ad, _ := netip.AddrFromSlice(a.A)
			out = append(out, ad.Unmap())
		}
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out
}

func newSet(t *testing.T, ttl time.Duration) (*zonefile.Set, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "edge.zone")
	s, err := zonefile.NewSet(path, name, zonefile.Options{TTL: ttl, Origin: "example.test"})
	if err != nil {
		t.Fatal(err)
	}
	return s, path
}

func TestAChangeIsVisibleAtTheNextQueryOverUDPAndTCP(t *testing.T) {
	ctx := context.Background()
	s, path := newSet(t, 30*time.Second)
	for _, a := range addrs("192.0.2.1", "192.0.2.2", "192.0.2.3") {
		if err := s.Add(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	srv := serve(t, path)
	for _, netw := range []string{"udp", "tcp"} {
		r := query(t, netw, srv, name, dns.TypeA)
		if !r.Authoritative || r.Rcode != dns.RcodeSuccess {
			t.Fatalf("%s: AA=%v rcode=%s, want AA and NOERROR", netw, r.Authoritative, dns.RcodeToString[r.Rcode])
		}
		if got := answerAddrs(r); !slices.Equal(got, addrs("192.0.2.1", "192.0.2.2", "192.0.2.3")) {
			t.Fatalf("%s answer %v", netw, got)
		}
		for _, rr := range r.Answer {
			if rr.Header().Ttl != 30 {
				t.Fatalf("%s TTL %d, want 30 from the file", netw, rr.Header().Ttl)
			}
		}
	}
	if err := s.Remove(ctx, netip.MustParseAddr("192.0.2.2")); err != nil {
		t.Fatal(err)
	}
	// No wait: the next query after the write sees it.
	for _, netw := range []string{"udp", "tcp"} {
		if got := answerAddrs(query(t, netw, srv, name, dns.TypeA)); !slices.Equal(got, addrs("192.0.2.1", "192.0.2.3")) {
			t.Fatalf("%s after Remove: %v", netw, got)
		}
	}
	got, err := s.List(ctx)
	if err != nil || !slices.Equal(got, addrs("192.0.2.1", "192.0.2.3")) {
		t.Fatalf("List = %v, %v", got, err)
	}
}

func TestAddAndRemoveAreIdempotent(t *testing.T) {
	ctx := context.Background()
	s, path := newSet(t, 0)
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for _, x := range []netip.Addr{a, b, a, b} {
		if err := s.Add(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := os.ReadFile(path)
	if err := s.Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatalf("a second Add of the same address rewrote the file (serial bumped?)")
	}
	for range 2 {
		if err := s.Remove(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.List(ctx); !slices.Equal(got, []netip.Addr{b}) {
		t.Fatalf("List = %v, want [%s]", got, b)
	}
	if s.TTL() != dnsset.DefaultTTL {
		t.Fatalf("TTL %s, want the default %s", s.TTL(), dnsset.DefaultTTL)
	}
}

func TestRemovingTheLastAddressIsRefusedAndChangesNothing(t *testing.T) {
	ctx := context.Background()
	s, path := newSet(t, 0)
	only := netip.MustParseAddr("192.0.2.9")
	if err := s.Add(ctx, only); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	err := s.Remove(ctx, only)
	if !errors.Is(err, dnsset.ErrLastAddress) {
		t.Fatalf("Remove of the last address: %v, want ErrLastAddress", err)
	}
	if !strings.Contains(err.Error(), "192.0.2.9") || !strings.Contains(err.Error(), "add the replacement") {
		t.Fatalf("error does not name the address and the fix: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a refused Remove changed the file")
	}
}

func TestRemoveRefusesARecordCachedLongerThanTheSetsTTL(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "edge.zone")
	zone := "example.test. 3600 IN SOA ns.example.test. h.example.test. 1 3600 600 86400 60\n" +
		"edge.example.test. 300 IN A 192.0.2.1\nedge.example.test. 300 IN A 192.0.2.2\n"
	if err := os.WriteFile(path, []byte(zone), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := zonefile.NewSet(path, name, zonefile.Options{TTL: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Remove(ctx, netip.MustParseAddr("192.0.2.1"))
	if err == nil || !strings.Contains(err.Error(), "TTL 5m0s") {
		t.Fatalf("Remove with a 300s record and a 60s set: %v, want a TTL refusal", err)
	}
	// Re-adding does not lower the TTL (resolvers may hold the 300 s answer): still refused.
	if err := s.Add(ctx, netip.MustParseAddr("192.0.2.1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, netip.MustParseAddr("192.0.2.1")); err == nil || !strings.Contains(err.Error(), "TTL 5m0s") {
		t.Fatalf("Remove after re-adding with a 60s set: %v, want the TTL refusal still", err)
	}
	// The TTL lowered by hand (and, by the operator, waited out): then Remove goes through.
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(zone, " 300 ", " 60 ")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, netip.MustParseAddr("192.0.2.1")); err != nil {
		t.Fatal(err)
	}
}

// An Add never lowers the A set's TTL. Resolvers were handed {192.0.2.1} at TTL 300; if adding
// 192.0.2.2 with a 60 s set rewrote the RRset at 60, Remove's cached-TTL check would compare
// against 60 and pass at once while resolvers keep 192.0.2.1 for up to 300 s.
func TestAddNeverLowersTheTTLSoRemoveStillSeesWhatResolversHold(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "edge.zone")
	zone := "example.test. 3600 IN SOA ns.example.test. h.example.test. 1 3600 600 86400 60\n" +
		"edge.example.test. 300 IN A 192.0.2.1\n"
	if err := os.WriteFile(path, []byte(zone), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := zonefile.NewSet(path, name, zonefile.Options{TTL: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ctx, netip.MustParseAddr("192.0.2.2")); err != nil {
		t.Fatal(err)
	}
	z, err := zonefile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, ttl := z.A(name); !slices.Equal(got, addrs("192.0.2.1", "192.0.2.2")) || ttl != 300*time.Second {
		t.Fatalf("after Add: %v at TTL %s, want both at 5m0s (the longer of the file's and the set's)", got, ttl)
	}
	for _, rr := range z.Records {
		if a, ok := rr.(*dns.A); ok && a.Hdr.Ttl != 300 {
			t.Fatalf("record %s: TTL %d, want 300 (one TTL per RRset, never lowered)", a, a.Hdr.Ttl)
		}
	}
	if got, ttl, err := s.Records(ctx); err != nil || !slices.Equal(got, addrs("192.0.2.1", "192.0.2.2")) || ttl != 300*time.Second {
		t.Fatalf("Records after the Add of a 60 s set: %v at TTL %s, %v; want both at 5m0s, the TTL the file serves", got, ttl, err)
	}
	for _, a := range addrs("192.0.2.1", "192.0.2.2") {
		if err := s.Remove(ctx, a); err == nil || !strings.Contains(err.Error(), "TTL 5m0s, longer than the 1m0s") {
			t.Fatalf("Remove of %s, served at TTL 300 s, with a 60 s set: %v; want the cached-TTL refusal", a, err)
		}
	}
	// A set with a longer TTL raises it, and then removes as before.
	long, err := zonefile.NewSet(path, name, zonefile.Options{TTL: 600 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := long.Add(ctx, netip.MustParseAddr("192.0.2.3")); err != nil {
		t.Fatal(err)
	}
	if z, err := zonefile.Load(path); err != nil {
		t.Fatal(err)
	} else if _, ttl := z.A(name); ttl != 600*time.Second {
		t.Fatalf("after an Add with a 600 s set: TTL %s, want 10m0s", ttl)
	}
	if err := long.Remove(ctx, netip.MustParseAddr("192.0.2.1")); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentWritersLoseNoChange(t *testing.T) {
	ctx := context.Background()
	s, path := newSet(t, 0)
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each writer its own Set (its own lock file descriptor), as separate processes have.
			w, err := zonefile.NewSet(path, name, zonefile.Options{Origin: "example.test."})
			if err == nil {
				err = w.Add(ctx, netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)}))
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.List(ctx)
	if err != nil || len(got) != n {
		t.Fatalf("after %d concurrent Adds List has %d addresses (%v), err %v", n, len(got), got, err)
	}
}

func TestServerAnswersLikeAnAuthoritativeServer(t *testing.T) {
	ctx := context.Background()
	s, path := newSet(t, 0)
	if err := s.Add(ctx, netip.MustParseAddr("192.0.2.1")); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, path)
	for _, tc := range []struct {
		name   string
		qname  string
		qtype  uint16
		rcode  int
		aa     bool
		answer int
		soa    bool
	}{
		{"the A set", "EDGE.example.test.", dns.TypeA, dns.RcodeSuccess, true, 1, false},
		{"no AAAA at the name: NODATA", name, dns.TypeAAAA, dns.RcodeSuccess, true, 0, true},
		{"a missing name in the zone", "nope.example.test.", dns.TypeA, dns.RcodeNameError, true, 0, true},
		{"the apex's SOA", "example.test.", dns.TypeSOA, dns.RcodeSuccess, true, 1, false},
		{"the parent of the apex", "test.", dns.TypeA, dns.RcodeRefused, false, 0, false},
		{"a name outside the zone", "example.org.", dns.TypeA, dns.RcodeRefused, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := query(t, "udp", srv, tc.qname, tc.qtype)
			if r.Rcode != tc.rcode || r.Authoritative != tc.aa || len(r.Answer) != tc.answer {
				t.Fatalf("rcode %s AA %v answers %d, want %s %v %d", dns.RcodeToString[r.Rcode], r.Authoritative,
					len(r.Answer), dns.RcodeToString[tc.rcode], tc.aa, tc.answer)
			}
			if tc.soa {
				if len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA {
					t.Fatalf("authority %v, want the SOA", r.Ns)
				}
			}
		})
	}
}

func TestServerKeepsTheLastGoodZoneWhenTheFileBreaks(t *testing.T) {
	ctx := context.Background()
	s, path := newSet(t, 0)
	if err := s.Add(ctx, netip.MustParseAddr("192.0.2.1")); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, path)
	if got := answerAddrs(query(t, "udp", srv, name, dns.TypeA)); len(got) != 1 {
		t.Fatalf("answer %v", got)
	}
	if err := os.WriteFile(path, []byte("edge.example.test. IN A not-an-address\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := query(t, "udp", srv, name, dns.TypeA)
	if r.Rcode != dns.RcodeSuccess || len(answerAddrs(r)) != 1 {
		t.Fatalf("after a broken write: rcode %s answer %v, want the last good zone", dns.RcodeToString[r.Rcode], r.Answer)
	}
}

func TestServerWithoutAGoodZoneAnswersServfail(t *testing.T) {
	srv := serve(t, filepath.Join(t.TempDir(), "missing.zone"))
	if r := query(t, "udp", srv, name, dns.TypeA); r.Rcode != dns.RcodeServerFailure {
		t.Fatalf("rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
}

func TestBadInputIsRefusedNamingFieldAndValue(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, path, record string
		opts               zonefile.Options
		want               string
	}{
		{"empty path", "", name, zonefile.Options{}, "--zone"},
		{"bad name", filepath.Join(dir, "z"), "edge..example.test", zonefile.Options{}, `name "edge..example.test" has an empty label`},
		{"ttl not seconds", filepath.Join(dir, "z"), name, zonefile.Options{TTL: 1500 * time.Millisecond}, "ttl 1.5s is not whole seconds"},
		{"name outside origin", filepath.Join(dir, "z"), name, zonefile.Options{Origin: "example.org"}, "not inside origin example.org."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := zonefile.NewSet(tc.path, tc.record, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewSet: %v, want it to say %q", err, tc.want)
			}
		})
	}
	s, _ := newSet(t, 0)
	if err := s.Add(ctx, netip.MustParseAddr("2001:db8::1")); err == nil || !strings.Contains(err.Error(), "not IPv4") {
		t.Fatalf("Add of an IPv6 address: %v", err)
	}
	// A file for another zone: the name is outside it.
	other := filepath.Join(dir, "other.zone")
	if err := os.WriteFile(other, []byte("example.org. 60 IN SOA ns.example.org. h.example.org. 1 1 1 1 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, _ := zonefile.NewSet(other, name, zonefile.Options{})
	if err := o.Add(ctx, netip.MustParseAddr("192.0.2.1")); err == nil || !strings.Contains(err.Error(), "outside the zone example.org.") {
		t.Fatalf("Add to a file of another zone: %v", err)
	}
}

func TestParseRefusesFilesThatAreNotOneZone(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"no SOA", "edge.example.test. 60 IN A 192.0.2.1\n", "no SOA"},
		{"two SOAs", "a.test. 60 IN SOA ns.a.test. h.a.test. 1 1 1 1 1\nb.a.test. 60 IN SOA ns.a.test. h.a.test. 1 1 1 1 1\n", "two SOA"},
		{"outside the apex", "a.test. 60 IN SOA ns.a.test. h.a.test. 1 1 1 1 1\nb.test. 60 IN A 192.0.2.1\n", "x.zone line 2: record"},
		{"syntax", "a.test. 60 IN SOA ns.a.test. h.a.test. 1 1 1 1 1\nx.a.test. 60 IN A 300.1.1.1\n", "x.zone"},
		{"include", "$INCLUDE /etc/passwd\n", "x.zone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := zonefile.Parse(strings.NewReader(tc.text), "x.zone")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// The server answers exact names only. A wildcard would get NXDOMAIN for every name it covers,
// and an NS record below the apex (a delegation) would be answered as the zone's own data, with
// AA, instead of a referral: Parse refuses both, naming the line, the owner and the rule, so the
// server never loads such a zone (it answers SERVFAIL, or keeps the last good one) and Set never
// rewrites one.
func TestParseRefusesWildcardsAndDelegationsTheServerCannotAnswer(t *testing.T) {
	const soa = "$ORIGIN example.test.\n@ 3600 IN SOA ns h 1 3600 600 86400 60\n@ 3600 IN NS ns\nns 60 IN A 192.0.2.53\n"
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"a wildcard", soa + "*.example.test. 60 IN A 192.0.2.9\n",
			[]string{"x.zone line 5:", "owner *.example.test.", "is a wildcard", "exact names only", "a record for each name"}},
		{"a relative wildcard after a comment", soa + "; the rest\n\n*.edge 60 IN A 192.0.2.9 ; all of them\n",
			[]string{"x.zone line 7:", "owner *.edge.example.test.", "is a wildcard"}},
		{"a delegation", soa + "edge 60 IN A 192.0.2.1\nsub 60 IN NS ns.elsewhere.test.\n",
			[]string{"x.zone line 6:", "NS record", "at sub.example.test., below the apex example.test.", "exact names only",
				"never with a referral", "Remove it"}},
		{"a delegation on its last line, no newline", soa + "sub 60 IN NS ns.elsewhere.test.",
			[]string{"x.zone line 5:", "sub.example.test."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := zonefile.Parse(strings.NewReader(tc.text), "x.zone")
			if err == nil {
				t.Fatal("Parse accepted it")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q: %v", w, err)
				}
			}
		})
	}
	// NS records at the apex are the zone's own: fine.
	if _, err := zonefile.Parse(strings.NewReader(soa+"edge 60 IN A 192.0.2.1\n"), "x.zone"); err != nil {
		t.Fatalf("a zone with NS at the apex: %v", err)
	}

	// At the server: a zone file with a wildcard is never loaded, so no name it covers gets a
	// wrong NXDOMAIN; with no good zone yet the answer is SERVFAIL.
	path := filepath.Join(t.TempDir(), "edge.zone")
	if err := os.WriteFile(path, []byte(soa+"*.example.test. 60 IN A 192.0.2.9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q := new(dns.Msg)
	q.SetQuestion("anything.example.test.", dns.TypeA)
	if r := zonefile.NewServer(path, nil).Answer(q); r.Rcode != dns.RcodeServerFailure {
		t.Fatalf("a query covered by the wildcard: rcode %s, want SERVFAIL (the zone is refused at load)", dns.RcodeToString[r.Rcode])
	}
	s, err := zonefile.NewSet(path, name, zonefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(context.Background(), netip.MustParseAddr("192.0.2.1")); err == nil || !strings.Contains(err.Error(), "wildcard") {
		t.Fatalf("Add to a zone file with a wildcard: %v, want the wildcard refusal", err)
	}
}

// FuzzParse: whatever Parse accepts, Bytes writes back as a file Parse reads to the same records.
func FuzzParse(f *testing.F) {
	f.Add("$ORIGIN example.test.\n@ 3600 IN SOA ns h 1 3600 600 86400 60\nedge 60 IN A 192.0.2.1\n")
	f.Add("example.test. 60 IN SOA ns.example.test. h.example.test. 1 1 1 1 1\n" +
		"edge.example.test. 30 IN A 192.0.2.1\nwww.example.test. 30 IN CNAME edge.example.test.\n" +
		"example.test. 30 IN TXT \"v=1; a\\\"b\"\n")
	f.Fuzz(func(t *testing.T, text string) {
		z, err := zonefile.Parse(strings.NewReader(text), "fuzz.zone")
		if err != nil {
			return
		}
		again, err := zonefile.Parse(bytes.NewReader(z.Bytes()), "rewritten.zone")
		if err != nil {
			t.Fatalf("Bytes of a parsed zone does not parse: %v\n%s", err, z.Bytes())
		}
		if len(again.Records) != len(z.Records) || again.Origin != z.Origin {
			t.Fatalf("round trip: %d records origin %s, want %d %s", len(again.Records), again.Origin, len(z.Records), z.Origin)
		}
		for i := range z.Records {
			if !dns.IsDuplicate(z.Records[i], again.Records[i]) {
				// Bytes puts the SOA first; compare as sets.
				found := false
				for _, rr := range again.Records {
					found = found || dns.IsDuplicate(z.Records[i], rr)
				}
				if !found {
					t.Fatalf("record %s lost in the round trip", z.Records[i])
				}
			}
		}
	})
}

func ExampleSet() {
	dir, _ := os.MkdirTemp("", "zone")
	defer os.RemoveAll(dir)
	s, _ := zonefile.NewSet(filepath.Join(dir, "edge.zone"), "edge.example.test", zonefile.Options{TTL: 30 * time.Second})
	ctx := context.Background()
	_ = s.Add(ctx, netip.MustParseAddr("192.0.2.1"))
	_ = s.Add(ctx, netip.MustParseAddr("192.0.2.2"))
	_ = s.Remove(ctx, netip.MustParseAddr("192.0.2.1"))
	got, _ := s.List(ctx)
	fmt.Println(got, s.TTL())
	// Output: [192.0.2.2] 30s
}
