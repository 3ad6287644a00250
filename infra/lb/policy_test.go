package lb

import (
	"testing"

	"github.com/zero502/zero502/infra/http1"
)

func TestExchangePolicy(t *testing.T) {
	parse := func(head string) *http1.Request {
		var r http1.Request
		if err := http1.ParseRequest([]byte(head), &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	get := parse("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	post := parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n")
	chunked := parse("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	for _, tc := range []struct {
		name   string
		req    *http1.Request
		aerr   attemptError
		reused bool
		stale  bool
		out    bool // the backend was out of rotation (the rotation failing open)
		eject  bool
		next   bool
		status int
	}{
		{"GET, connect refused", get, attemptConnect, false, false, false, true, true, 0},
		{"GET, fresh connection broke", get, attemptNoAnswer, false, false, false, true, true, 0},
		{"GET, pooled connection broke", get, attemptNoAnswer, true, true, false, false, true, 0},
		{"POST, connect refused", post, attemptConnect, false, false, false, true, false, 502},
		{"POST, pooled connection broke", post, attemptNoAnswer, true, false, false, false, false, 502},
		{"POST, fresh connection broke", post, attemptNoAnswer, false, false, false, true, false, 502},
		{"chunked GET is never replayed", chunked, attemptNoAnswer, true, false, false, false, false, 502},
		{"GET, no head in time", get, attemptTimeout, false, false, false, false, false, 504},
		{"GET, broken head", get, attemptBad, true, false, false, false, false, 502},
		{"GET, refused by a fail-open backend", get, attemptConnect, false, false, true, true, true, 0},
		{"POST, refused by a fail-open backend: no backend is healthy", post, attemptConnect, false, false, true, true, false, 503},
		{"POST, fail-open backend broke after connect", post, attemptNoAnswer, false, false, true, true, false, 502},
	} {
		if got := staleRetry(tc.req, tc.aerr, tc.reused); got != tc.stale {
			t.Errorf("%s: stale retry %v, want %v", tc.name, got, tc.stale)
		}
		eject, next, status := failure(tc.req, tc.aerr, tc.reused, !tc.out)
		if eject != tc.eject || next != tc.next || status != tc.status {
			t.Errorf("%s: eject %v, next %v, status %d; want %v, %v, %d", tc.name, eject, next, status, tc.eject, tc.next, tc.status)
		}
	}
	if writeFailed(false) != attemptNoAnswer || writeFailed(true) != attemptCut {
		t.Errorf("a failed write: %v before the head went out, %v after; want attemptNoAnswer, attemptCut", writeFailed(false), writeFailed(true))
	}
}
