package origin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"

	"github.com/pires/go-proxyproto"
)

// headerKind is what a connection opened with.
type headerKind string

// The kinds of opening a sniff tells apart.
const (
	// HeaderNone: no PROXY header; the bytes went on untouched (TLS, plain text, nothing yet).
	HeaderNone headerKind = "none"
	// HeaderV1: a PROXY protocol v1 text line, parsed and stripped.
	HeaderV1 headerKind = "v1"
	// HeaderV2: a PROXY protocol v2 binary header, parsed and stripped.
	HeaderV2 headerKind = "v2"
)

// errMalformedHeader is a connection that opened with a PROXY signature whose header could not be
// parsed (a bad body, or the rest of the header did not arrive within the header timeout). The
// connection is closed: its bytes can be neither trusted as a header nor passed on as payload.
var errMalformedHeader = errors.New("malformed PROXY header")

// sniffBufferSize is the read buffer of a sniffed connection: a v1 line (at most 107 bytes) or a
// v2 header with its TLVs (at most proxyproto.MaxV2HeaderSize past the 16-byte prefix) fits.
const sniffBufferSize = 4096 + 16

// SniffBufferSize is the size a bufio.Reader given to SniffHeader needs.
const SniffBufferSize = sniffBufferSize

// Sniffed is what SniffHeader found at the start of a connection.
type Sniffed struct {
	// Kind is what the connection opened with.
	Kind headerKind
	// Claimed is the client address a header carries (see Peer.Claimed); invalid without one.
	Claimed netip.AddrPort
	// Empty: the stream ended before its first byte.
	Empty bool
}

// SniffHeader is the sniff Conn runs, for servers that read their connections themselves
// (the in-house LB): it reads from br (at least SniffBufferSize bytes) only as far as it takes
// to tell a PROXY v1 or v2 header from anything else, parses and strips a header, and leaves
// the rest of the stream in br, the sniffed bytes included when there was no header. Set a read
// deadline on the connection first: a client that sends nothing before it passes as no header.
// A header that does not parse is errMalformedHeader; whether the peer may send one at all is
// the caller's decision (see Trusts).
func SniffHeader(br *bufio.Reader) (Sniffed, error) {
	s, err := sniff(br)
	return Sniffed{Kind: s.kind, Claimed: claimedAddr(s), Empty: s.empty}, err
}

// sniffed is what the first bytes of a connection turned out to be.
type sniffed struct {
	kind   headerKind
	header *proxyproto.Header // the parsed header; nil when kind is HeaderNone
	// empty: the stream ended before its first byte (a connect-and-close, as health checks do).
	empty bool
}

// sniff reads from br only as far as it takes to tell a PROXY header from anything else, and
// parses the header when there is one. Afterwards br yields the rest of the stream: what follows
// the header or, when there was none, every byte, the sniffed ones included (they stay in br's
// buffer). It decides as soon as the bytes stop being a prefix of a signature, so a client that
// sends a few bytes and waits for an answer is not held.
//
// A read that ends before the decision (io.EOF, or a deadline set on the connection under br)
// means no header: the bytes seen so far are passed on. Any other read error is returned as is.
// A complete signature followed by a header that does not parse, its TLVs included (a v2 TLV
// cut short by the header's length), returns errMalformedHeader.
func sniff(br *bufio.Reader) (sniffed, error) {
	for {
		seen, _ := br.Peek(br.Buffered())
		kind, decided := classify(seen)
		if decided {
			if kind == HeaderNone {
				return sniffed{kind: HeaderNone}, nil
			}
			if kind == HeaderV1 {
				bufferV1Line(br)
			}
			h, err := proxyproto.Read(br)
			if err == nil {
				// Read does not look at a v2 header's TLV area: a TLV whose length runs past the
				// header would be accepted, and its claimed address believed, with the bytes
				// after it unaccounted for. The header is consumed either way (the connection is
				// closed).
				_, err = h.TLVs()
			}
			if err != nil {
				return sniffed{kind: kind}, fmt.Errorf("%w (%s): %w", errMalformedHeader, kind, err)
			}
			return sniffed{kind: kind, header: h}, nil
		}
		if _, err := br.Peek(len(seen) + 1); err != nil {
			switch {
			case errors.Is(err, io.EOF):
				return sniffed{kind: HeaderNone, empty: len(seen) == 0}, nil
			case errors.Is(err, os.ErrDeadlineExceeded):
				return sniffed{kind: HeaderNone}, nil
			}
			return sniffed{kind: HeaderNone}, err
		}
	}
}

// v1MaxLine is the longest PROXY v1 line, its CRLF included (the spec's 107 bytes).
const v1MaxLine = 107

// bufferV1Line reads into br's buffer until it holds a v1 line's LF (or v1MaxLine bytes), so
// that a line whose bytes came in several reads (TCP segments) is parsed whole: proxyproto
// refuses a v1 line it cannot take from the buffer alone, where the spec recommends receivers be
// tolerant of partial headers. A read that ends first (EOF, the header timeout) leaves the line cut short, which
// proxyproto then refuses.
func bufferV1Line(br *bufio.Reader) {
	for {
		seen, _ := br.Peek(br.Buffered())
		if bytes.IndexByte(seen, '\n') >= 0 || len(seen) >= v1MaxLine {
			return
		}
		if _, err := br.Peek(len(seen) + 1); err != nil {
			return
		}
	}
}

// v1Signature is how a PROXY v1 line starts; proxyproto.SIGV1 holds the same five bytes.
var v1Signature = []byte("PROXY")

// classify says what seen, the first bytes of a stream, is: decided is false while seen is
// still a strict prefix of a signature (more bytes are needed), true once it holds a whole
// signature (kind v1 or v2) or has stopped looking like one (kind none).
func classify(seen []byte) (kind headerKind, decided bool) {
	switch {
	case len(seen) >= len(proxyproto.SIGV2) && bytes.Equal(seen[:len(proxyproto.SIGV2)], proxyproto.SIGV2):
		return HeaderV2, true
	case len(seen) >= len(v1Signature) && bytes.Equal(seen[:len(v1Signature)], v1Signature):
		return HeaderV1, true
	case bytes.HasPrefix(proxyproto.SIGV2, seen) || bytes.HasPrefix(v1Signature, seen):
		return HeaderNone, false
	}
	return HeaderNone, true
}
