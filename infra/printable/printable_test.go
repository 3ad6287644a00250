package printable

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStringEscapesWhatCouldDriveATerminal(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text: é, …, ✓, U+FFFD \uFFFD", "plain text: é, …, ✓, U+FFFD \uFFFD"},
		{"two lines\n\tindented", "two lines\n\tindented"},
		{"\x1b]0;owned\x07title", `\x1b]0;owned\atitle`},
		{"red \x1b[31mtext\x1b[0m", `red \x1b[31mtext\x1b[0m`},
		{"deployed\rfailed", `deployed\rfailed`},
		{"back\bspace, del\x7f, nul\x00", `back\bspace, del\x7f, nul\x00`},
		{"C1 CSI \u009b31m, NEL \u0085", `C1 CSI \u009b31m, NEL \u0085`},
		{"a raw byte \x9b and \xff", `a raw byte \x9b and \xff`},
		{"separator\u2028stays", "separator\u2028stays"}, // not a terminal control
	} {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLineKeepsItsOneLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"services.web.ports: a note", "services.web.ports: a note"},
		{"two\nlines\tand tab", `two\nlines\tand tab`},
		{"separator\u2028and\u2029paragraph, NEL \u0085", `separator\u2028and\u2029paragraph, NEL \u0085`},
		{"\x1b[2K erased", `\x1b[2K erased`},
		{"raw \xc3", `raw \xc3`},
	} {
		if got := Line(c.in); got != c.want {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Writer escapes what each Write carries; a rune split across writes comes out as the escapes
// of its bytes, never as the rune.
func TestWriterEscapesEveryWrite(t *testing.T) {
	var out bytes.Buffer
	w := Writer(&out)
	for _, s := range []string{"host-a  \x1b[2Jdrain\n", "\xc2", "\x9b", "ok\n"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", s, n, err, len(s))
		}
	}
	if want := "host-a  \\x1b[2Jdrain\n\\xc2\\x9bok\n"; out.String() != want {
		t.Errorf("wrote %q, want %q", out.String(), want)
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[31m", "\r\n\t", "\u009b", "\xff\xfe", "é\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, got := range map[string]string{"String": String(s), "Line": Line(s)} {
			if !utf8.ValidString(got) {
				t.Fatalf("%s(%q) = %q: not UTF-8", name, s, got)
			}
			for _, r := range got {
				if r < 0x20 && (name == "Line" || r != '\n' && r != '\t') || r >= 0x7f && r <= 0x9f {
					t.Fatalf("%s(%q) = %q: holds control %U", name, s, got, r)
				}
			}
		}
		if safe := !strings.ContainsFunc(s, func(r rune) bool { return unsafeInText(r) }) && utf8.ValidString(s); safe && String(s) != s {
			t.Fatalf("String(%q) = %q: changed text with nothing to escape", s, String(s))
		}
	})
}
