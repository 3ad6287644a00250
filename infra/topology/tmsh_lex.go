package topology

import (
	"fmt"
	"strings"
)

// tmshItem is one element of tmsh text: a word, or a braced block of items. A word may have
// been quoted ("US/New York"); quotes inside a word (isp="Example Net") are removed too.
type tmshItem struct {
	word   string
	quoted bool
	block  []tmshItem
	isBody bool // a { … } block
	line   int
}

// tmshStmt is one top-level statement: the words up to a line end or a block, and the block
// that closes it. text is the statement as pasted, whitespace collapsed to one line.
type tmshStmt struct {
	words []tmshItem
	body  []tmshItem
	line  int
	text  string
}

// lexTMSH splits tmsh text into top-level statements. A statement ends at the end of its line,
// or, when a block opens on it, where that block closes (so a multi-line stanza is one
// statement and "… { score 30 }" on one line is too). "#" starts a comment where a word could
// start. Lines of a terminal session (the prompt, "tmsh list …") are skipped.
func lexTMSH(text string) ([]tmshStmt, error) {
	l := &tmshLexer{src: text, line: 1}
	var out []tmshStmt
	for {
		st, ok, err := l.statement()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		if len(st.words) > 0 && !promptLine(st.text) {
			out = append(out, st)
		}
	}
}

// promptLine reports whether a line is from the terminal rather than configuration: a prompt
// ("root@(bigip1)(cfg-sync Standalone)(Active)(/Common)(tmos)# list gtm topology", "[root@bigip1:Active] config #
// tmsh list …") or the command itself ("tmsh list gtm topology", "list gtm region").
func promptLine(line string) bool {
	f := strings.Fields(line)
	if len(f) == 0 {
		return false
	}
	return strings.Contains(line, ")# ") || strings.HasSuffix(line, ")#") || strings.Contains(line, "] config # ") ||
		f[0] == "tmsh" || f[0] == "list" || f[0] == "show"
}

type tmshLexer struct {
	src  string
	pos  int
	line int
}

// statement reads the next top-level statement; ok is false at the end of the text.
func (l *tmshLexer) statement() (tmshStmt, bool, error) {
	var st tmshStmt
	start := -1
	for {
		l.skipBlanks()
		if l.pos >= len(l.src) {
			if start >= 0 {
				st.text = collapse(l.src[start:])
			}
			return st, start >= 0, nil
		}
		c := l.src[l.pos]
		switch {
		case c == '\n':
			l.pos++
			l.line++
			if start >= 0 {
				st.text = collapse(l.src[start:l.pos])
				return st, true, nil
			}
		case c == '#' && len(st.words) == 0:
			l.skipLine()
		case c == '}':
			return st, false, fmt.Errorf("line %d: \"}\" closes no block", l.line)
		case c == '{':
			if start < 0 {
				return st, false, fmt.Errorf("line %d: \"{\" opens a block that belongs to no statement", l.line)
			}
			line := l.line
			l.pos++
			body, err := l.block(line)
			if err != nil {
				return st, false, err
			}
			st.body = body
			st.text = collapse(l.src[start:l.pos])
			return st, true, nil
		default:
			if start < 0 {
				start, st.line = l.pos, l.line
			}
			w, err := l.word()
			if err != nil {
				return st, false, err
			}
			st.words = append(st.words, w)
		}
	}
}

// block reads items up to the "}" that closes a block opened on line open.
func (l *tmshLexer) block(open int) ([]tmshItem, error) {
	items := []tmshItem{}
	for {
		l.skipBlanks()
		if l.pos >= len(l.src) {
			return nil, fmt.Errorf("line %d: \"{\" is never closed (want a matching \"}\")", open)
		}
		switch c := l.src[l.pos]; c {
		case '\n':
			l.pos++
			l.line++
		case '}':
			l.pos++
			return items, nil
		case '{':
			line := l.line
			l.pos++
			inner, err := l.block(line)
			if err != nil {
				return nil, err
			}
			items = append(items, tmshItem{block: inner, isBody: true, line: line})
		default:
			w, err := l.word()
			if err != nil {
				return nil, err
			}
			items = append(items, w)
		}
	}
}

// word reads one word: up to a blank, a brace or a line end, with "…" quoting anywhere in it.
func (l *tmshLexer) word() (tmshItem, error) {
	it := tmshItem{line: l.line}
	var b strings.Builder
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == '"':
			it.quoted = true
			l.pos++
			for {
				if l.pos >= len(l.src) || l.src[l.pos] == '\n' {
					return it, fmt.Errorf("line %d: a quoted string is not closed on its line (want \"…\")", it.line)
				}
				c := l.src[l.pos]
				l.pos++
				if c == '"' {
					break
				}
				if c == '\\' && l.pos < len(l.src) && l.src[l.pos] != '\n' {
					c = l.src[l.pos]
					l.pos++
				}
				b.WriteByte(c)
			}
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '{' || c == '}':
			it.word = b.String()
			return it, nil
		default:
			b.WriteByte(c)
			l.pos++
		}
	}
	it.word = b.String()
	return it, nil
}

func (l *tmshLexer) skipBlanks() {
	for l.pos < len(l.src) {
		switch l.src[l.pos] {
		case ' ', '\t', '\r':
			l.pos++
		default:
			return
		}
	}
}

func (l *tmshLexer) skipLine() {
	for l.pos < len(l.src) && l.src[l.pos] != '\n' {
		l.pos++
	}
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }
