package origin

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"testing/iotest"

	"github.com/pires/go-proxyproto"
)

func v2Header(t testing.TB, src, dst string) []byte {
	t.Helper()
	s, _ := net.ResolveTCPAddr("tcp", src)
	d, _ := net.ResolveTCPAddr("tcp", dst)
	b, err := proxyproto.HeaderProxyFromAddrs(2, s, d).Format()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tlsClientHello is the start of a TLS 1.2+ ClientHello record: handshake (0x16), TLS 1.0 record
// version (0x03 0x01), a length, ClientHello (0x01).
var tlsClientHello = []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03}

func TestSniffTellsHeadersFromEverythingElse(t *testing.T) {
	v2 := v2Header(t, "198.51.100.7:5555", "192.0.2.1:443")
	v6 := v2Header(t, "[2001:db8::7]:5555", "[2001:db8::1]:443")
	for _, tc := range []struct {
		name      string
		in        []byte
		kind      headerKind
		claimed   string // "" : no claim
		rest      string // what the stream yields after sniffing
		empty     bool
		malformed bool
	}{
		{"v2 over IPv4", append(v2, "payload"...), HeaderV2, "198.51.100.7:5555", "payload", false, false},
		{"v2 over IPv6", append(v6, "payload"...), HeaderV2, "[2001:db8::7]:5555", "payload", false, false},
		{"v1 line", []byte("PROXY TCP4 198.51.100.7 192.0.2.1 5555 443\r\npayload"), HeaderV1, "198.51.100.7:5555", "payload", false, false},
		{"v1 UNKNOWN", []byte("PROXY UNKNOWN\r\npayload"), HeaderV1, "", "payload", false, false},
		{"TLS ClientHello", tlsClientHello, HeaderNone, "", string(tlsClientHello), false, false},
		{"plain text", []byte("GET / HTTP/1.1\r\n\r\n"), HeaderNone, "", "GET / HTTP/1.1\r\n\r\n", false, false},
		{"a v2 signature prefix, then EOF", proxyproto.SIGV2[:11], HeaderNone, "", string(proxyproto.SIGV2[:11]), false, false},
		{"PROX, then EOF", []byte("PROX"), HeaderNone, "", "PROX", false, false},
		{"nothing at all", nil, HeaderNone, "", "", true, false},
		{"v2 signature, bad command", append(append([]byte{}, proxyproto.SIGV2...), 0x99, 0x11, 0, 0), HeaderV2, "", "", false, true},
		{"v2 signature, cut short", proxyproto.SIGV2, HeaderV2, "", "", false, true},
		{"v1, no CRLF", []byte("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n"), HeaderV1, "", "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(bytes.NewReader(tc.in), sniffBufferSize)
			s, err := sniff(br)
			if tc.malformed {
				if !errors.Is(err, errMalformedHeader) || s.kind != tc.kind {
					t.Fatalf("sniff = %+v, %v; want %s, ErrMalformedHeader", s, err, tc.kind)
				}
				return
			}
			if err != nil {
				t.Fatalf("sniff: %v", err)
			}
			if s.kind != tc.kind || s.empty != tc.empty {
				t.Errorf("kind %s empty %v, want %s %v", s.kind, s.empty, tc.kind, tc.empty)
			}
			if got := LogAddr(claimedAddr(s)); got != tc.claimed {
				t.Errorf("claimed %q, want %q", got, tc.claimed)
			}
			rest, _ := io.ReadAll(br)
			if string(rest) != tc.rest {
				t.Errorf("the stream after sniffing is %q, want %q", rest, tc.rest)
			}
		})
	}
}

// v2WithTLVs is a v2 PROXY/TCP4 header from 203.0.113.66:4711 to 192.0.2.1:443 whose length
// covers the 12-byte address block and then tlvs, followed by rest.
func v2WithTLVs(tlvs []byte, rest string) []byte {
	b := append([]byte{}, proxyproto.SIGV2...)
	n := 12 + len(tlvs)
	b = append(b, 0x21, 0x11, byte(n>>8), byte(n))
	b = append(b, 203, 0, 113, 66, 192, 0, 2, 1, 0x12, 0x67, 0x01, 0xbb)
	b = append(b, tlvs...)
	return append(b, rest...)
}

func TestSniffRefusesAV2HeaderWhoseTLVsDoNotParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		tlvs []byte
	}{
		{"a TLV claiming 65535 bytes, none present", []byte{0x20, 0xff, 0xff}},
		{"a TLV one byte longer than what is left", []byte{0x04, 0x00, 0x02, 0x00}},
		{"a TLV type without its length", []byte{0x04}},
		{"a TLV length cut in half", []byte{0x04, 0x00}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(bytes.NewReader(v2WithTLVs(tc.tlvs, "payload")), sniffBufferSize)
			s, err := sniff(br)
			if !errors.Is(err, errMalformedHeader) || s.kind != HeaderV2 || s.header != nil {
				t.Fatalf("sniff = kind %s, header %v, claimed %q, err %v; want v2, no header, ErrMalformedHeader",
					s.kind, s.header != nil, LogAddr(claimedAddr(s)), err)
			}
		})
	}
	t.Run("well-formed TLVs are accepted", func(t *testing.T) {
		tlvs := []byte{0x04, 0x00, 0x02, 0x00, 0x00, 0x20, 0x00, 0x00} // a NOOP of 2 bytes, an empty SSL TLV
		br := bufio.NewReaderSize(bytes.NewReader(v2WithTLVs(tlvs, "payload")), sniffBufferSize)
		s, err := sniff(br)
		if err != nil || s.kind != HeaderV2 || LogAddr(claimedAddr(s)) != "203.0.113.66:4711" {
			t.Fatalf("sniff = kind %s, claimed %q, err %v; want v2 from 203.0.113.66:4711", s.kind, LogAddr(claimedAddr(s)), err)
		}
		if rest, _ := io.ReadAll(br); string(rest) != "payload" {
			t.Fatalf("the stream after sniffing is %q, want %q", rest, "payload")
		}
	})
}

// FuzzSniff: whatever a connection opens with, sniffing never panics, and it either parses a
// header (whose signature the bytes start with, whose TLVs parse, the rest of the stream being
// what follows it), passes every byte on untouched, or refuses a header whose signature it saw.
func FuzzSniff(f *testing.F) {
	f.Add(append(v2Header(f, "198.51.100.7:5555", "192.0.2.1:443"), "payload"...))
	f.Add(append(v2Header(f, "[2001:db8::7]:5555", "[2001:db8::1]:443"), 0x16, 0x03, 0x01))
	f.Add([]byte("PROXY TCP4 198.51.100.7 192.0.2.1 5555 443\r\nhello"))
	f.Add([]byte("PROXY TCP6 2001:db8::7 2001:db8::1 5555 443\r\n"))
	f.Add([]byte("PROXY UNKNOWN\r\n"))
	f.Add(tlsClientHello)
	f.Add(append(append([]byte{}, proxyproto.SIGV2...), 0x20, 0x00, 0x00, 0x00))
	f.Add(append(append([]byte{}, proxyproto.SIGV2...), 0x21, 0x11, 0x00, 0x0c, 1, 2, 3))
	f.Add(proxyproto.SIGV2[:7])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, wrap := range []func(io.Reader) io.Reader{
			func(r io.Reader) io.Reader { return r },
			iotest.OneByteReader, // bytes trickling in one at a time
		} {
			br := bufio.NewReaderSize(wrap(bytes.NewReader(in)), sniffBufferSize)
			s, err := sniff(br)
			startsWithSignature := bytes.HasPrefix(in, proxyproto.SIGV2) || bytes.HasPrefix(in, v1Signature)
			switch {
			case err != nil:
				if !errors.Is(err, errMalformedHeader) || !startsWithSignature {
					t.Fatalf("sniff(%q) = %v: only a header with a signature may be refused", in, err)
				}
			case s.header != nil:
				rest, _ := io.ReadAll(br)
				if !startsWithSignature || !bytes.HasSuffix(in, rest) || len(rest) >= len(in) {
					t.Fatalf("sniff(%q) parsed a %s header, leaving %q", in, s.kind, rest)
				}
				if _, err := s.header.TLVs(); err != nil {
					t.Fatalf("sniff(%q) accepted a %s header whose TLVs do not parse: %v", in, s.kind, err)
				}
				_ = LogAddr(claimedAddr(s)) // a parsed header always has loggable addresses
			default:
				rest, _ := io.ReadAll(br)
				if !bytes.Equal(rest, in) || s.kind != HeaderNone || s.empty != (len(in) == 0) {
					t.Fatalf("sniff(%q) passed through %q (kind %s, empty %v): not the same bytes", in, rest, s.kind, s.empty)
				}
			}
		}
	})
}

// A header whose bytes arrive in two reads (two TCP segments, the signature in the first) is
// read whole within the header timeout, v1 as v2: the spec recommends being tolerant of partial
// headers, and HeaderTimeout is documented to bound the wait for the rest of a header once its
// signature arrived. The pipe's Write returns only once the sniffer has read the first part, so
// the second arrives in a read of its own.
func TestSniffReadsAHeaderSplitOverTwoReads(t *testing.T) {
	v2 := v2Header(t, "198.51.100.7:5555", "192.0.2.1:443")
	for _, tc := range []struct {
		name        string
		first, rest []byte
		kind        headerKind
	}{
		{"v1 cut after the signature", []byte("PROXY "), []byte("TCP4 198.51.100.7 192.0.2.1 5555 443\r\npayload"), HeaderV1},
		{"v1 cut in an address", []byte("PROXY TCP4 198.51"), []byte(".100.7 192.0.2.1 5555 443\r\npayload"), HeaderV1},
		{"v1 cut before its LF", []byte("PROXY TCP4 198.51.100.7 192.0.2.1 5555 443\r"), []byte("\npayload"), HeaderV1},
		{"v2 cut in its addresses", v2[:20], append(append([]byte{}, v2[20:]...), "payload"...), HeaderV2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			go func() {
				if _, err := pw.Write(tc.first); err != nil {
					return
				}
				_, _ = pw.Write(tc.rest)
				_ = pw.Close()
			}()
			br := bufio.NewReaderSize(pr, SniffBufferSize)
			s, err := SniffHeader(br)
			if err != nil {
				t.Fatalf("SniffHeader = %v: a header split over two reads was refused", err)
			}
			if s.Kind != tc.kind || s.Claimed.String() != "198.51.100.7:5555" {
				t.Errorf("sniffed %+v, want %s claimed 198.51.100.7:5555", s, tc.kind)
			}
			if rest, _ := io.ReadAll(br); string(rest) != "payload" {
				t.Errorf("the stream after the header is %q, want %q", rest, "payload")
			}
		})
	}
}
