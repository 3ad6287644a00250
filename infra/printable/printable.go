// Package printable makes text safe to print on a terminal when it came from somewhere else: a
// host's step and its stderr, a service's answer, a file. Such text may carry control
// characters (ESC sequences that move the cursor, rewrite a line, set the window title or, on
// some terminals, answer back; a carriage return that hides what came before it on the line;
// C1 controls; bytes that are not UTF-8). Every one is written as its Go escape (\x1b, \r,
// \u009b), so the text shows what was sent and can do nothing to the terminal.
//
// String keeps newlines and tabs (a multi-line error, a log tail quoted in it); Line keeps only
// graphic runes and the space, for text that must stay on its one line.
package printable

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// String is s with every control character but newline and tab, and every byte that is not
// UTF-8, written as its Go escape.
func String(s string) string { return escape(s, unsafeInText) }

// Line is s with every rune that is not graphic, but the space, written as its Go escape
// (strconv.QuoteRuneToGraphic without the quotes): \n, \r, \u2028, \x1b.
func Line(s string) string { return escape(s, notGraphic) }

func unsafeInText(r rune) bool {
	return r != '\n' && r != '\t' && (r < 0x20 || r >= 0x7f && r <= 0x9f)
}

func notGraphic(r rune) bool { return r != ' ' && !unicode.IsGraphic(r) }

// escape is s with each rune unsafe says, and each byte that is not UTF-8, written as its Go
// escape; s itself when there is none (no allocation on the common path).
func escape(s string, unsafe func(rune) bool) string {
	var b strings.Builder
	done := 0 // s[:done] is written into b
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(s[done:i])
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafe(r):
			b.WriteString(s[done:i])
			q := strconv.QuoteRuneToGraphic(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			i += size
			continue
		}
		i += size
		done = i
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// Writer is w with String applied to every Write. A caller that writes whole strings (a line, a
// table's cell) gets them escaped as String would; a rune split across two writes is written as
// the escapes of its bytes, never passed through.
func Writer(w io.Writer) io.Writer { return writer{w} }

type writer struct{ w io.Writer }

func (p writer) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, String(string(b))); err != nil {
		return 0, err
	}
	return len(b), nil
}
