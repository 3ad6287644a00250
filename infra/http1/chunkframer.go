package http1

import "errors"

// ChunkFramer finds where a chunked message body ends (RFC 9112 §7.1) while its bytes stream
// through, without holding any of them; the LB frames chunked request bodies and chunked
// responses, on both of its paths, with it alone. Scan is given the next bytes as they arrive,
// in pieces of any size, and says how many belong to the body. Its rules are strict, since a
// proxy and the server behind it must agree on where a request ends (request smuggling): a hex
// size of at most 15 digits, then only optional whitespace (BWS) and the extensions, or the
// line's end (RFC 9112 §7.1.1: "3 x" is broken framing, not size 3); each extension is ';', a
// token name and optionally '=' and a token or a quoted string that closes on its line (a server
// that reads a quoted string to its closing quote across the line's end would see a chunk where
// the LB sees data); CRLF line ends (a bare CR or LF is broken framing); CRLF after the data;
// trailer lines that are header fields (RFC 9112 §7.1.2): a token name, a colon, a value without
// control characters but HTAB, no leading whitespace (obs-fold); at most maxChunkLine bytes per
// line and maxTrailer for the trailer section.
type ChunkFramer struct {
	state  chunkState
	size   int64 // of the current chunk while reading its size; data bytes left in it after
	digits int
	line   int  // bytes of the current size or trailer line
	trail  int  // bytes of the trailer section
	drop   bool // Relay: the trailer line being read is one the LB drops (see trailerDropped)
}

type chunkState uint8

const (
	csSize          chunkState = iota // the hex size
	csSizeBWS                         // whitespace after the size, up to ';' or CR
	csExt                             // after an extension's ';': BWS, then its name
	csExtName                         // an extension's name
	csExtAfterName                    // BWS after a name: '=', ';' or CR
	csExtValue                        // after '=': BWS, then a token or a quoted string
	csExtToken                        // a token value
	csExtQuoted                       // inside a quoted value
	csExtQuotedPair                   // after a backslash inside a quoted value
	csExtAfterValue                   // BWS after a value: ';' or CR
	csSizeLF                          // LF after the size line
	csData                            // size bytes of data
	csDataCR                          // CR after the data
	csDataLF                          // LF after the data
	csTrailer                         // the start of a trailer line, or the final CRLF
	csTrailerName                     // a trailer field's name, up to its colon
	csTrailerText                     // a trailer field's value
	csTrailerLF                       // LF after a trailer line
	csEndLF                           // LF of the final empty line
	csDone                            // the body ended
)

const (
	maxChunkLine = 4 << 10
	maxTrailer   = 16 << 10
)

var errChunkFraming = errors.New("broken chunked framing")

// reset makes f ready for a new body.
func (f *ChunkFramer) Reset() { *f = ChunkFramer{} }

// done reports whether the body ended.
func (f *ChunkFramer) Done() bool { return f.state == csDone }

// dataLeft is how many bytes the framer takes next without looking at them (chunk data), 0
// when it is inside framing. Reading at most that much never reads past the body's end.
func (f *ChunkFramer) DataLeft() int64 {
	if f.state == csData {
		return f.size
	}
	return 0
}

// scan consumes the bytes of p that belong to the body and returns how many that is: all of p,
// or fewer when the body ended inside p (the rest is the next message). errChunkFraming when the
// framing is broken.
func (f *ChunkFramer) Scan(p []byte) (int, error) {
	i := 0
	for i < len(p) && f.state != csDone {
		if f.state == csData {
			i += f.Data(len(p) - i)
			continue
		}
		n, err := f.Frame(p[i:])
		i += n
		if err != nil {
			return i, err
		}
	}
	return i, nil
}

// Relay is Scan for a relay that forwards the body in its framing: it consumes the bytes at the
// start of p up to where the trailer section starts or ends a field the LB drops
// (trailerDropped), returns how many (n) and whether they go on (send), and the caller writes
// p[:n] only when send. Everything but those fields goes on as it came: the data, the framing,
// the other trailer fields and the trailer section's final CRLF. When p ends inside a trailer
// field's name too short to judge yet, n is 0: the caller reads more and calls again with those
// bytes still at the start of p. A body without trailer fields costs what Scan does.
func (f *ChunkFramer) Relay(p []byte) (n int, send bool, err error) {
	i := 0
	for i < len(p) && f.state != csDone {
		if f.state == csData {
			i += f.Data(len(p) - i)
			continue
		}
		if f.state == csTrailer {
			drop := false
			if p[i] != '\r' { // a field's line, not the final CRLF
				var judged bool
				if drop, judged = trailerVerdict(p[i:]); !judged {
					return i, !f.drop, nil
				}
			}
			if drop != f.drop {
				if i > 0 {
					return i, !f.drop, nil
				}
				f.drop = drop
			}
		}
		if err := f.step(p[i]); err != nil {
			return i + 1, !f.drop, err
		}
		i++
	}
	return i, !f.drop, nil
}

// trailerVerdict judges the trailer line that starts p: whether the LB drops it
// (trailerDropped) and whether p holds enough of its name to tell (judged). A name longer than
// any the LB drops is judged kept before its colon arrives; a line that is not a field is left
// to the framer to refuse.
func trailerVerdict(p []byte) (drop, judged bool) {
	for j, c := range p {
		switch {
		case c == ':':
			return trailerDropped(p[:j]), true
		case !tchar[c] || j >= maxDroppedTrailer:
			return false, true
		}
	}
	return false, false
}

// frame consumes the framing bytes at the start of p, up to the next chunk data or the body's
// end, and returns how many (see scan for the error). A relay that decodes the coding drops
// them and keeps the data.
func (f *ChunkFramer) Frame(p []byte) (int, error) {
	i := 0
	for i < len(p) && f.state != csDone && f.state != csData {
		c := p[i]
		i++
		if err := f.step(c); err != nil {
			return i, err
		}
	}
	return i, nil
}

// data takes up to n bytes of chunk data (at most dataLeft) and returns how many it took.
func (f *ChunkFramer) Data(n int) int {
	k := int(min(int64(n), f.size))
	f.size -= int64(k)
	if f.size == 0 && f.state == csData {
		f.state = csDataCR
	}
	return k
}

// step takes one framing byte.
func (f *ChunkFramer) step(c byte) error {
	switch f.state {
	case csSize:
		if d, ok := hexValue(c); ok {
			if f.digits == 15 {
				return errChunkFraming
			}
			f.size = f.size<<4 | int64(d)
			f.digits++
			f.line++
			return nil
		}
		if f.digits == 0 {
			return errChunkFraming
		}
		switch c {
		case ';':
			f.state = csExt
		case ' ', '\t':
			f.state = csSizeBWS
		case '\r':
			f.state = csSizeLF
		default:
			return errChunkFraming
		}
	case csSizeBWS:
		switch c {
		case ' ', '\t':
		case ';':
			f.state = csExt
		case '\r':
			f.state = csSizeLF
		default:
			return errChunkFraming
		}
	case csExt, csExtName, csExtAfterName, csExtValue, csExtToken, csExtQuoted, csExtQuotedPair, csExtAfterValue:
		if err := f.extByte(c); err != nil {
			return err
		}
	case csSizeLF:
		if c != '\n' {
			return errChunkFraming
		}
		f.line, f.digits = 0, 0
		if f.size == 0 {
			f.state = csTrailer
		} else {
			f.state = csData
		}
		return nil
	case csDataCR:
		if c != '\r' {
			return errChunkFraming
		}
		f.state = csDataLF
		return nil
	case csDataLF:
		if c != '\n' {
			return errChunkFraming
		}
		f.state, f.size = csSize, 0
		return nil
	case csTrailer:
		if c == '\r' {
			f.state = csEndLF
			return nil
		}
		if !tchar[c] { // obs-fold, an empty name, anything but a field
			return errChunkFraming
		}
		f.state = csTrailerName
		return f.trailerByte(c)
	case csTrailerName:
		switch {
		case c == ':':
			f.state = csTrailerText
		case !tchar[c]: // the line's end without a colon, whitespace before it
			return errChunkFraming
		}
		return f.trailerByte(c)
	case csTrailerText:
		if c == '\r' {
			f.state = csTrailerLF
			return nil
		}
		return f.trailerByte(c)
	case csTrailerLF:
		if c != '\n' {
			return errChunkFraming
		}
		f.line = 0
		f.state = csTrailer
		return nil
	case csEndLF:
		if c != '\n' {
			return errChunkFraming
		}
		f.state = csDone
		return nil
	}
	if f.line++; f.line > maxChunkLine {
		return errChunkFraming
	}
	return nil
}

// extByte takes one byte of a chunk extension (RFC 9112 §7.1.1):
//
//	chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
//	chunk-ext-val = token / quoted-string
func (f *ChunkFramer) extByte(c byte) error {
	bws := c == ' ' || c == '\t'
	switch f.state {
	case csExt:
		switch {
		case tchar[c]:
			f.state = csExtName
		case !bws:
			return errChunkFraming
		}
	case csExtName, csExtAfterName, csExtToken, csExtAfterValue:
		named := f.state == csExtName || f.state == csExtAfterName
		switch {
		case c == '\r':
			f.state = csSizeLF
		case c == ';':
			f.state = csExt
		case c == '=' && named:
			f.state = csExtValue
		case bws:
			if named {
				f.state = csExtAfterName
			} else {
				f.state = csExtAfterValue
			}
		case tchar[c] && (f.state == csExtName || f.state == csExtToken):
		default:
			return errChunkFraming
		}
	case csExtValue:
		switch {
		case c == '"':
			f.state = csExtQuoted
		case tchar[c]:
			f.state = csExtToken
		case !bws:
			return errChunkFraming
		}
	case csExtQuoted:
		switch {
		case c == '"':
			f.state = csExtAfterValue
		case c == '\\':
			f.state = csExtQuotedPair
		case c < ' ' && c != '\t' || c == 0x7f: // qdtext: no CR, LF or other control
			return errChunkFraming
		}
	case csExtQuotedPair:
		if c < ' ' && c != '\t' || c == 0x7f {
			return errChunkFraming
		}
		f.state = csExtQuoted
	}
	return nil
}

func (f *ChunkFramer) trailerByte(c byte) error {
	if c < ' ' && c != '\t' || c == 0x7f {
		return errChunkFraming
	}
	f.line++
	f.trail++
	if f.line > maxChunkLine || f.trail > maxTrailer {
		return errChunkFraming
	}
	return nil
}

func hexValue(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
