package http1

import (
	"strings"
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

// relayAll runs a fresh framer's Relay over p as a relay does: the bytes arrive step at a time
// into a buffer, Relay is called on what is buffered and not consumed, and a call that consumes
// nothing waits for the next bytes. It returns what went on, how many bytes were the body,
// whether it ended, and whether the framing broke.
func relayAll(p []byte, step int) (out []byte, used int, done, broken bool) {
	var f ChunkFramer
	arrived := 0
	for !f.Done() {
		if used == arrived {
			if arrived == len(p) {
				break
			}
			arrived = min(arrived+step, len(p))
		}
		n, send, err := f.Relay(p[used:arrived])
		if send {
			out = append(out, p[used:used+n]...)
		}
		used += n
		if err != nil {
			return out, used, false, true
		}
		if n == 0 {
			if arrived == len(p) {
				break
			}
			arrived = min(arrived+step, len(p))
		}
	}
	return out, used, f.Done(), false
}

func TestChunkFramerRelayDropsTrailerFieldsTheLBControls(t *testing.T) {
	for _, tc := range []struct{ name, in, out string }{
		{"no trailer", "5\r\nhello\r\n0\r\n\r\nGET", "5\r\nhello\r\n0\r\n\r\n"},
		{"an end-to-end trailer field", "0\r\nX-Sum: 5\r\n\r\n", "0\r\nX-Sum: 5\r\n\r\n"},
		{"a forged client address", "1\r\nx\r\n0\r\nX-Forwarded-For: 6.6.6.6\r\nX-Sum: 1\r\nx-real-ip: 6.6.6.6\r\n\r\n",
			"1\r\nx\r\n0\r\nX-Sum: 1\r\n\r\n"},
		{"forwarding headers however spelled", "0\r\nForwarded: for=6.6.6.6\r\nX_Forwarded_For: 6.6.6.6\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: evil\r\n\r\n",
			"0\r\n\r\n"},
		{"framing and routing", "0\r\nHost: evil\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\nConnection: close\r\nTrailer: X\r\nExpect: 100-continue\r\nTE: trailers\r\n\r\n",
			"0\r\n\r\n"},
		{"kept between dropped", "0\r\nHost: a\r\nX-A: 1\r\nHost: b\r\nX-B: 2\r\n\r\n", "0\r\nX-A: 1\r\nX-B: 2\r\n\r\n"},
		{"a long name", "0\r\nX-A-Very-Long-Trailer-Field-Name: 1\r\n\r\n", "0\r\nX-A-Very-Long-Trailer-Field-Name: 1\r\n\r\n"},
		{"a name that starts like a dropped one", "0\r\nHosts: 1\r\nX-Forwarded-Forwarder: 2\r\n\r\n", "0\r\nHosts: 1\r\nX-Forwarded-Forwarder: 2\r\n\r\n"},
	} {
		for _, step := range []int{1, 2, 3, 7, 1 << 20} {
			out, used, done, broken := relayAll([]byte(tc.in), step)
			want := len(tc.in)
			if strings.HasSuffix(tc.in, "GET") {
				want -= 3
			}
			if string(out) != tc.out || used != want || !done || broken {
				t.Errorf("%s (pieces of %d): relayed %q (%d bytes, done %v, broken %v), want %q (%d bytes, done)",
					tc.name, step, out, used, done, broken, tc.out, want)
			}
		}
	}
}

func TestChunkFramerRelayAllocatesNothing(t *testing.T) {
	p := []byte("5\r\nhello\r\n0\r\nX-Sum: 5\r\nHost: evil\r\n\r\n")
	var f ChunkFramer
	if n := testing.AllocsPerRun(100, func() {
		f.Reset()
		for used := 0; !f.Done(); {
			n, _, _ := f.Relay(p[used:])
			used += n
		}
	}); n != 0 {
		t.Fatalf("Relay allocated %v times per body", n)
	}
}

// FuzzChunkFramerRelay: however the bytes are split, Relay finds the end Scan finds (or the
// same broken framing) and sends the same bytes, and what it sends is a well-framed body whose trailer holds no field the LB
// drops.
func FuzzChunkFramerRelay(f *testing.F) {
	for _, s := range []string{"0\r\n\r\n", "5;a=b\r\nhello\r\n0\r\nX: y\r\nHost: z\r\n\r\nrest", "0\r\nX-Forwarded-For: 1\r\n\r\n",
		"0\r\nX_Real_IP: 1\r\nX-Sum: 2\r\n\r\n", "0\r\nHost : a\r\n\r\n", "0\r\nGET / HTTP/1.1\r\n\r\n", "0\r\nTransfer-Encoding: chunked\r\n\r\n"} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, p []byte, step uint8) {
		n, done, broken := scanAll(p, len(p)+1)
		out1, used1, done1, broken1 := relayAll(p, len(p)+1)
		out2, used2, done2, broken2 := relayAll(p, int(step)%7+1)
		// an unfinished body may end in a trailer field's name, which Relay leaves unconsumed
		if done1 != done || broken1 != broken || done && used1 != n {
			t.Fatalf("Scan: %d %v %v; Relay: %d %v %v", n, done, broken, used1, done1, broken1)
		}
		if done1 != done2 || broken1 != broken2 || done1 && (used1 != used2 || string(out1) != string(out2)) {
			t.Fatalf("whole: %q %d %v %v; in pieces of %d: %q %d %v %v", out1, used1, done1, broken1, int(step)%7+1, out2, used2, done2, broken2)
		}
		if !done1 {
			return
		}
		if m, ok, bad := scanAll(out1, len(out1)+1); bad || !ok || m != len(out1) {
			t.Fatalf("relayed %q: not one well-framed body", out1)
		}
		var g ChunkFramer // finds where the trailer section starts
		i := 0
		for ; i < len(out1) && g.state != csTrailer; i++ {
			_, _ = g.Scan(out1[i : i+1])
		}
		for _, line := range strings.Split(string(out1[i:]), "\r\n") {
			if name, _, ok := strings.Cut(line, ":"); ok && trailerDropped([]byte(name)) {
				t.Fatalf("relayed %q: trailer field %q went on", out1, name)
			}
		}
	})
}
