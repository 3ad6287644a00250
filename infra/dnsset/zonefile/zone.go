// Package zonefile owns the file-backed DNS zone for local rollouts and tests: a standard
// RFC 1035 master file (parsed with miekg/dns), the A set of one name inside it that Set
// changes (atomically, under a flock beside the file), and Server, a small authoritative DNS
// server (UDP and TCP) that answers from the file's newest content. A change is visible at the
// next query after the write: the server checks the file (inode, size, mtime) on every query
// and reloads it when it changed.
package zonefile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/zero502/zero502/infra/dnsset"
	"github.com/zero502/zero502/infra/trust"
)

// Zone is one parsed zone file: the apex (the SOA's owner) and every record in it, names
// lower case. Comments and the file's layout are not kept; Bytes writes one record a line.
type Zone struct {
	Origin  string
	Records []dns.RR
}

// Parse reads a master file. It must hold exactly one SOA, whose owner is the zone's apex, and
// nothing outside that apex; $INCLUDE is refused. Server answers exact names only, so what
// needs more is refused too, rather than answered wrongly: a wildcard owner ("*.", RFC 4592;
// Server would answer NXDOMAIN for the names it covers) and an NS record below the apex (a
// delegation; Server would answer the child's names as its own data, with AA, instead of a
// referral). file names the source in errors, with the line of the record.
func Parse(r io.Reader, file string) (*Zone, error) {
	lr := &lineReader{r: bufio.NewReader(r)}
	zp := dns.NewZoneParser(lr, "", file)
	var recs []dns.RR
	var lines []int // lines[i]: the line recs[i] ends on
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		rr.Header().Name = dns.CanonicalName(rr.Header().Name)
		recs = append(recs, rr)
		lines = append(lines, lr.line())
	}
	if err := zp.Err(); err != nil {
		return nil, fmt.Errorf("zone file %s: %w", file, err)
	}
	var soa *dns.SOA
	for _, rr := range recs {
		if s, ok := rr.(*dns.SOA); ok {
			if soa != nil {
				return nil, fmt.Errorf("zone file %s: two SOA records (%s and %s); a zone has exactly one",
					file, soa.Hdr.Name, s.Hdr.Name)
			}
			soa = s
		}
	}
	if soa == nil {
		return nil, fmt.Errorf("zone file %s: no SOA record; a zone file starts with the apex's SOA, e.g. "+
			"\"example.test. 3600 IN SOA ns.example.test. hostmaster.example.test. 1 3600 600 86400 60\"", file)
	}
	if soa.Hdr.Name == "." || soa.Ns == "" || soa.Mbox == "" {
		return nil, fmt.Errorf("zone file %s: SOA %q needs a zone apex other than the root and a primary server "+
			"and mailbox, e.g. \"example.test. 3600 IN SOA ns.example.test. hostmaster.example.test. 1 3600 600 86400 60\"",
			file, soa.String())
	}
	z := &Zone{Origin: soa.Hdr.Name, Records: recs}
	for i, rr := range recs {
		owner := rr.Header().Name
		if !dns.IsSubDomain(z.Origin, owner) {
			return nil, fmt.Errorf("zone file %s line %d: record %q is outside the zone %s (its SOA's owner)",
				file, lines[i], rr.String(), z.Origin)
		}
		if strings.HasPrefix(owner, "*.") {
			return nil, fmt.Errorf("zone file %s line %d: owner %s of record %q is a wildcard; this server answers "+
				"exact names only and would answer NXDOMAIN for the names it covers. Write a record for each name "+
				"instead, or serve the zone with a full DNS server", file, lines[i], owner, rr.String())
		}
		if c := rr.Header().Class; c != dns.ClassINET {
			return nil, fmt.Errorf("zone file %s line %d: record %q is of class %s; this server answers class IN only, "+
				"and counts every A record as the zone's: write it as IN or remove it", file, lines[i], rr.String(), dns.Class(c))
		}
		if rr.Header().Rrtype == dns.TypeDNAME {
			return nil, fmt.Errorf("zone file %s line %d: DNAME record %q: this server answers exact names only and would "+
				"answer NXDOMAIN for the names below %s it redirects; write a CNAME for each name instead, or serve the zone "+
				"with a full DNS server", file, lines[i], rr.String(), owner)
		}
		if rr.Header().Rrtype == dns.TypeNS && owner != z.Origin {
			return nil, fmt.Errorf("zone file %s line %d: NS record %q at %s, below the apex %s, delegates %s; this "+
				"server answers exact names only, never with a referral, and would answer it as this zone's own "+
				"authoritative data. "+
				"Remove it and put the child's records here under their exact names, or serve the zone with a full "+
				"DNS server", file, lines[i], rr.String(), owner, z.Origin, owner)
		}
		// Set rewrites the file from the parsed records: refuse one that would not come back.
		back, err := dns.NewRR(rr.String())
		if err != nil || back == nil || !dns.IsDuplicate(rr, back) {
			return nil, fmt.Errorf("zone file %s line %d: record %q would not survive being written back (%v); "+
				"write it in its usual presentation form", file, lines[i], rr.String(), err)
		}
	}
	if i, why := cnameConflict(recs); why != "" {
		return nil, fmt.Errorf("zone file %s line %d: record %q: %s", file, lines[i], recs[i].String(), why)
	}
	return z, nil
}

// cnameConflict finds the first of recs that may not be beside the ones before it, and says why
// ("" when none): a name with a CNAME has no other record (RFC 1034 §3.6.2, RFC 2181 §10.1;
// DNSSEC's RRSIG and NSEC aside), and the apex always has its SOA. The server would answer each
// query type with whichever it finds, the CNAME for some and the other data for the rest.
func cnameConflict(recs []dns.RR) (int, string) {
	type seen struct{ cname, other bool }
	byName := map[string]seen{}
	for i, rr := range recs {
		h := rr.Header()
		if h.Rrtype == dns.TypeRRSIG || h.Rrtype == dns.TypeNSEC {
			continue
		}
		had := byName[h.Name]
		if had.cname || h.Rrtype == dns.TypeCNAME && had.other {
			return i, fmt.Sprintf("%s has a CNAME, and a name with a CNAME has no other record (RFC 1034 §3.6.2), "+
				"so the server would answer some queries with the CNAME and others with the rest; keep either the "+
				"CNAME or the other records of %s (a CNAME cannot be at the apex, which has the SOA)", h.Name, h.Name)
		}
		had.cname, had.other = had.cname || h.Rrtype == dns.TypeCNAME, had.other || h.Rrtype != dns.TypeCNAME
		byName[h.Name] = had
	}
	return 0, ""
}

// lineReader counts the lines the zone parser has read, so an error can name a record's line.
// The parser reads byte by byte (it uses an io.ByteReader as is) and stops at the newline that
// ends a record, so after Next returns a record the count is the line it ends on.
type lineReader struct {
	r     *bufio.Reader
	lines int  // newlines read
	atEOL bool // the last byte read was a newline
}

func (l *lineReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for _, b := range p[:n] {
		l.count(b)
	}
	return n, err
}

func (l *lineReader) ReadByte() (byte, error) {
	b, err := l.r.ReadByte()
	if err == nil {
		l.count(b)
	}
	return b, err
}

func (l *lineReader) count(b byte) {
	l.atEOL = b == '\n'
	if l.atEOL {
		l.lines++
	}
}

// line is the line of the record just parsed, 1-based: the last newline read ended it, or it
// is the last line, without a newline.
func (l *lineReader) line() int {
	if l.atEOL {
		return l.lines
	}
	return l.lines + 1
}

// Load reads and parses the zone file at path, once infra/trust holds it (trust.Open): a zone
// file another user could have written (owned by another user, or group or others may write it
// or a directory above it) is refused, naming the file, its owner or mode and what to change,
// for what it says is served as authoritative and put in the edge rotation. A missing file is
// an error wrapping fs.ErrNotExist.
func Load(path string) (*Zone, error) {
	f, err := trust.Open(path, os.Getuid())
	if errors.Is(err, trust.ErrRefused) {
		return nil, fmt.Errorf("zone file %s: not loaded, for another user could have written it: %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("zone file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("zone file %s: %w", path, err)
	}
	return Parse(bytes.NewReader(data), path)
}

// New returns a zone holding only a SOA for origin, the start of a fresh file. Its negative
// caching TTL (the SOA minimum) is ttl, so a removed name is not remembered longer than a
// removed address.
func New(origin string, ttl time.Duration) *Zone {
	secs := uint32(ttl / time.Second)
	return &Zone{Origin: origin, Records: []dns.RR{&dns.SOA{
		Hdr:     dns.RR_Header{Name: origin, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: secs},
		Ns:      "ns." + origin,
		Mbox:    "hostmaster." + origin,
		Serial:  1,
		Refresh: 3600, Retry: 600, Expire: 86400, Minttl: secs,
	}}}
}

// SOA is the zone's SOA record.
func (z *Zone) SOA() *dns.SOA {
	for _, rr := range z.Records {
		if s, ok := rr.(*dns.SOA); ok {
			return s
		}
	}
	return nil
}

// Bytes is the zone as a master file: $ORIGIN, then one record a line, SOA first.
func (z *Zone) Bytes() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "$ORIGIN %s\n; written by zero502 dns: one record a line; comments are not kept\n", z.Origin)
	recs := slices.Clone(z.Records)
	slices.SortStableFunc(recs, func(a, b dns.RR) int {
		_, aSOA := a.(*dns.SOA)
		_, bSOA := b.(*dns.SOA)
		switch {
		case aSOA && !bSOA:
			return -1
		case bSOA && !aSOA:
			return 1
		}
		return 0
	})
	for _, rr := range recs {
		b.WriteString(rr.String())
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// A returns the addresses of name's A records, sorted, and the longest TTL among them.
func (z *Zone) A(name string) ([]netip.Addr, time.Duration) {
	var out []netip.Addr
	var ttl time.Duration
	for _, rr := range z.Records {
		a, ok := rr.(*dns.A)
		if !ok || a.Hdr.Name != name {
			continue
		}
		if addr, ok := netip.AddrFromSlice(a.A); ok {
			out = append(out, addr.Unmap())
		}
		ttl = max(ttl, time.Duration(a.Hdr.Ttl)*time.Second)
	}
	return dnsset.Sorted(out), ttl
}

// SetA replaces name's A records with addrs, all with ttl (RFC 2181 §5.2: one TTL per RRset),
// and bumps the SOA serial so secondaries and caches can tell the zone changed.
func (z *Zone) SetA(name string, addrs []netip.Addr, ttl time.Duration) {
	recs := z.Records[:0:0]
	for _, rr := range z.Records {
		if a, ok := rr.(*dns.A); ok && a.Hdr.Name == name {
			continue
		}
		recs = append(recs, rr)
	}
	for _, addr := range dnsset.Sorted(addrs) {
		recs = append(recs, &dns.A{
			Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: uint32(ttl / time.Second)},
			A:   addr.AsSlice(),
		})
	}
	z.Records = recs
	if soa := z.SOA(); soa != nil {
		soa.Serial++
	}
}

// checkName refuses a name outside the zone.
func (z *Zone) checkName(name string) error {
	if !dns.IsSubDomain(z.Origin, name) {
		return fmt.Errorf("name %s is outside the zone %s of this file; use a name under %s or a file "+
			"for that zone", name, z.Origin, z.Origin)
	}
	return nil
}
