package zonefile_test

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/dnsset/zonefile"
)

// A CNAME is the only data its name may have (RFC 1034 §3.6.2, RFC 2181 §10.1): the server
// would answer an A query with the A beside it and an AAAA query with the CNAME, and at the apex
// (which always has the SOA) a resolver would follow the CNAME away from the zone's own data.
// Parse refuses such a file, naming the line, the owner and the rule; Set never writes one.
func TestACNAMEBesideOtherDataIsRefused(t *testing.T) {
	const soa = "$ORIGIN example.test.\n@ 3600 IN SOA ns h 1 3600 600 86400 60\n@ 3600 IN NS ns\nns 60 IN A 192.0.2.53\n"
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"a CNAME at the apex", soa + "@ 60 IN CNAME elsewhere.test.\n",
			[]string{"x.zone line 5:", "CNAME", "example.test.", "no other record"}},
		{"a CNAME beside an A", soa + "www 60 IN A 192.0.2.1\nwww 60 IN CNAME edge\n",
			[]string{"x.zone line 6:", "CNAME", "www.example.test.", "no other record"}},
		{"an A after a CNAME", soa + "www 60 IN CNAME edge\nwww 60 IN A 192.0.2.1\n",
			[]string{"x.zone line 6:", "CNAME", "www.example.test."}},
		{"two CNAMEs", soa + "www 60 IN CNAME edge\nwww 60 IN CNAME other\n",
			[]string{"CNAME", "www.example.test."}},
		// the server answers class IN and exact names only
		{"a record of class CH", soa + "www 60 CH A 192.0.2.1\n",
			[]string{"x.zone line 5:", "class CH", "IN only"}},
		{"a DNAME", soa + "old 60 IN DNAME new.example.test.\n",
			[]string{"x.zone line 5:", "DNAME", "NXDOMAIN"}},
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
	if _, err := zonefile.Parse(strings.NewReader(soa+"edge 60 IN A 192.0.2.1\nwww 60 IN CNAME edge\n"), "x.zone"); err != nil {
		t.Fatalf("a CNAME alone at its name: %v", err)
	}

	// Set: adding an A to a name that is a CNAME would write a file the server refuses (it keeps
	// serving the last good zone) and every later change fails; refused, the file untouched.
	path := filepath.Join(t.TempDir(), "edge.zone")
	before := []byte(soa + "edge 60 IN A 192.0.2.1\nwww 60 IN CNAME edge\n")
	if err := os.WriteFile(path, before, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := zonefile.NewSet(path, "www.example.test", zonefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(context.Background(), netip.MustParseAddr("192.0.2.2")); err == nil || !strings.Contains(err.Error(), "CNAME") {
		t.Fatalf("Add to a name that is a CNAME: %v, want it refused naming the CNAME", err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(after, before) {
		t.Fatalf("a refused Add changed the file:\n%s", after)
	}
	if _, err := zonefile.Load(path); err != nil {
		t.Fatalf("the zone file no longer loads: %v", err)
	}
}
