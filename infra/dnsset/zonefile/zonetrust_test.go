package zonefile_test

import (
	"context"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// A zone file another user could have written (mode 0666, or owned by another user) is not
// believed: `dns serve` answers SERVFAIL rather than hand out an address of theirs
// authoritatively, and Set's List and Add fail naming the file, its owner or mode and what to
// change.
func TestAZoneFileAnotherUserCanWriteIsNotServed(t *testing.T) {
	ctx := context.Background()
	s, path := newSet(t, 30*time.Second)
	if err := s.Add(ctx, netip.MustParseAddr("192.0.2.1")); err != nil {
		t.Fatal(err)
	}
	// the file becomes another user's and anyone's to write; that user adds an A record
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		_ = os.Chown(path, 65534, 65534)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(name + " 30 IN A 203.0.113.66\n")
	f.Close()
	srv := serve(t, path)
	r := query(t, "udp", srv, name, dns.TypeA)
	if got := answerAddrs(r); slices.Contains(got, netip.MustParseAddr("203.0.113.66")) {
		t.Fatalf("served %v from a zone file mode 0666 owned by uid 65534: the forged 203.0.113.66 is in the rotation; want it refused (SERVFAIL) naming the file, its owner and mode", got)
	}
	if r.Rcode != dns.RcodeServerFailure {
		t.Errorf("rcode %s; want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	want := "has mode 0666"
	if os.Getuid() == 0 {
		want = "owned by uid 65534"
	}
	if _, err := s.List(ctx); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
		t.Errorf("List = %v; want a refusal naming %s and saying %q", err, path, want)
	}
	if err := s.Add(ctx, netip.MustParseAddr("192.0.2.2")); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Add = %v; want a refusal saying %q", err, want)
	}
}

// A refused zone file is judged again at the next query: once its mode is fixed (which changes
// neither its content nor its mtime) the server answers from it without a restart.
func TestAZoneFileIsServedOnceItsModeIsFixed(t *testing.T) {
	ctx := context.Background()
	s, path := newSet(t, 30*time.Second)
	if err := s.Add(ctx, netip.MustParseAddr("192.0.2.1")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, path)
	if r := query(t, "udp", srv, name, dns.TypeA); r.Rcode != dns.RcodeServerFailure {
		t.Fatalf("a zone file mode 0666: rcode %s, answer %v; want SERVFAIL", dns.RcodeToString[r.Rcode], answerAddrs(r))
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	r := query(t, "udp", srv, name, dns.TypeA)
	if got := answerAddrs(r); r.Rcode != dns.RcodeSuccess || !slices.Equal(got, addrs("192.0.2.1")) {
		t.Fatalf("after chmod 644: rcode %s, answer %v; want 192.0.2.1", dns.RcodeToString[r.Rcode], got)
	}
}
