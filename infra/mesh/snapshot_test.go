package mesh

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// `mesh verdicts` reads at most maxSnapshot bytes of GET /mesh/verdicts: a larger answer, here a
// well-formed snapshot streamed past the limit by whatever answers on that address, is refused
// with an error saying so, instead of being read whole into memory.
func TestFetchSnapshotRefusesAnAnswerAboveItsLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if _, err := io.WriteString(w, `{"server":"a","verdicts":[],"route":{"servers":["a"],"reason":"`); err != nil {
			return
		}
		chunk := strings.Repeat("x", 64<<10)
		for sent := 0; sent <= maxSnapshot; sent += len(chunk) {
			if _, err := io.WriteString(w, chunk); err != nil {
				return // the reader stopped: what a bound does
			}
		}
		_, _ = io.WriteString(w, `"}}`)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	s, err := FetchSnapshot(addr, 30*time.Second)
	if want := fmt.Sprintf("answer above %d bytes", maxSnapshot); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("an answer above %d bytes: snapshot of %q with a %d-byte reason, err %v; want an error naming %s and saying %q",
			maxSnapshot, s.Server, len(s.Route.Reason), err, addr, want)
	}
}
