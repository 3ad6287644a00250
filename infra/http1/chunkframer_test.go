package http1

import (
	"testing"
)

// scanAll runs a fresh framer over p in pieces of step bytes and returns how many bytes were
// the body, whether it ended, and whether the framing broke.
func scanAll(p []byte, step int) (int, bool, bool) {
	var f ChunkFramer
	used := 0
	for used < len(p) && !f.Done() {
		end := min(used+step, len(p))
		n, err := f.Scan(p[used:end])
		used += n
		if err != nil {
			return used, false, true
		}
	}
	return used, f.Done(), false
}

func TestChunkFramer(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		body     int // bytes of the body; -1: broken
		done     bool
	}{
		{"empty body", "0\r\n\r\n", 5, true},
		{"one chunk then the next request", "5\r\nhello\r\n0\r\n\r\nGET", 15, true},
		{"extensions and a trailer", "5;a=b; c\r\nhello\r\n0;last\r\nX-T: 1\r\nY:\t2\r\n\r\n", 41, true},
		{"upper-case hex", "A\r\n0123456789\r\n0\r\n\r\n", 20, true},
		{"unfinished", "5\r\nhel", 6, false},
		{"no digits", ";x\r\n", -1, false},
		{"bare LF after the size", "5\nhello\r\n", -1, false},
		{"bare CR after the size", "5\rhello\r\n", -1, false},
		{"data longer than the size", "3\r\nhello\r\n", -1, false},
		{"sixteen hex digits", "1000000000000000\r\n", -1, false},
		{"whitespace before an extension", "1 \t;a=b\r\nx\r\n0 \r\n\r\n", 18, true}, // BWS ";" chunk-ext
		{"space inside the size", "1 0\r\n", -1, false},                             // not "1" then an extension " 0"
		{"junk after the size", "3 x\r\nabc\r\n0\r\n\r\n", -1, false},
		{"junk after the size and a tab", "2\tzz\r\nok\r\n", -1, false},
		{"whitespace then a bare CR", "1 \rx\r\n", -1, false},
		{"empty trailer value", "0\r\nX:\r\n\r\n", 9, true},
		{"trailer line without a colon", "0\r\nGET /smuggled HTTP/1.1\r\n\r\n", -1, false},
		{"trailer name alone", "0\r\nX-T\r\n\r\n", -1, false},
		{"obs-fold in the trailer", "0\r\nX: a\r\n b\r\n\r\n", -1, false},
		{"trailer line starting with a tab", "0\r\n\tX: a\r\n\r\n", -1, false},
		{"whitespace before a trailer colon", "0\r\nX : a\r\n\r\n", -1, false},
		{"empty trailer name", "0\r\n: a\r\n\r\n", -1, false},
		{"control character in an extension", "1;\x00\r\n", -1, false},
		{"extension values, quoted and not", "1; a = b ;c=\"x;\\\" y\"\t;d\r\nx\r\n0\r\n\r\n", 33, true},
		{"quoted extension value across the line's end", "1;a=\"x\r\n\"\r\nx\r\n0\r\n\r\n", -1, false},
		{"quoted extension value not closed", "1;a=\"x\r\nx\r\n0\r\n\r\n", -1, false},
		{"junk after a quoted extension value", "1;a=\"x\"y\r\nx\r\n0\r\n\r\n", -1, false},
		{"extension without a name", "1;=b\r\nx\r\n", -1, false},
		{"extension with an empty value", "1;a=\r\nx\r\n", -1, false},
		{"extension name with a slash", "0 ;/ HTTP/1.1\r\nHost: x\r\n\r\n", -1, false},
		{"empty extension", "1;\r\nx\r\n", -1, false},
		{"two values", "1;a=b=c\r\nx\r\n", -1, false},
		{"space inside a name", "1;a b\r\nx\r\n", -1, false},
		{"bare LF ending the trailer", "0\r\nX: 1\n\r\n", -1, false},
		{"bare LF as the last line", "0\r\n\n", -1, false},
		{"negative size", "-1\r\n", -1, false},
	} {
		for _, step := range []int{1, 3, 1 << 20} {
			n, done, broken := scanAll([]byte(tc.in), step)
			if tc.body < 0 {
				if !broken {
					t.Errorf("%s (pieces of %d): not broken (%d bytes, done %v)", tc.name, step, n, done)
				}
				continue
			}
			if broken || n != tc.body || done != tc.done {
				t.Errorf("%s (pieces of %d): %d bytes, done %v, broken %v; want %d, %v", tc.name, step, n, done, broken, tc.body, tc.done)
			}
		}
	}
}

// FuzzChunkFramer: however the bytes are split, the framer finds the same end, and a size line
// it accepts holds the size its hex digits say.
func FuzzChunkFramer(f *testing.F) {
	for _, s := range []string{"0\r\n\r\n", "5;a=b\r\nhello\r\n0\r\nX: y\r\n\r\nrest", "5\nhello", "ff\r\n", "0\r\nX\x01\r\n\r\n",
		"3 x\r\nabc\r\n", "1 ;a\r\nx\r\n0\r\n\r\n", "0\r\nGET / HTTP/1.1\r\n\r\n", "0\r\nX: a\r\n b\r\n\r\n"} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, p []byte, step uint8) {
		n1, done1, broken1 := scanAll(p, len(p)+1)
		n2, done2, broken2 := scanAll(p, int(step)%7+1)
		if done1 != done2 || broken1 != broken2 || (!broken1 && n1 != n2) {
			t.Fatalf("whole: %d %v %v; in pieces of %d: %d %v %v", n1, done1, broken1, int(step)%7+1, n2, done2, broken2)
		}
		checkSizeLine(t, p)
	})
}
