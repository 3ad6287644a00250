package acceptance

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
)

// The admin write API of the real binary: a backend added at run time joins after its checks,
// an admin drain lets its in-flight request finish and sends it nothing new, and a drained
// backend is removed.

// adminDo sends one admin write and returns its status and body.
func (l *lbProc) adminDo(t *testing.T, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+l.admin+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(adminapi.ClientHeader, "1")
	resp, err := directClient.Do(req)
	if err != nil {
		t.Fatalf("admin %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestAdminAddDrainRemoveAtRunTime(t *testing.T) {
	t.Parallel()
	a, b := startBackend(t, "a"), startBackend(t, "b")
	l := startLB(t, []*backendProc{a}, "--health-interval", "200ms", "--health-timeout", "150ms", "--healthy-threshold", "2")

	if code, body := l.adminDo(t, "PUT", "/admin/backends/"+b.addr); code != 201 || !strings.Contains(body, `"joining"`) {
		t.Fatalf("PUT a new backend: %d %s, want 201 joining", code, body)
	}
	l.waitInRotation(t, 5*time.Second, b)
	if got := tally(l.sequence(t, 4)); got["a"] != 2 || got["b"] != 2 {
		t.Fatalf("rotation over the configured and the added backend: %v, want 2 each", got)
	}

	// One slow request on each backend (strict rotation), then the admin drains b under it.
	codes := make(chan string, 2)
	for i := 0; i < 2; i++ {
		go func() {
			resp, body, err := l.get("/slow?ms=1500&id=in-flight")
			if err != nil {
				codes <- err.Error()
				return
			}
			codes <- fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		}()
	}
	eventually(t, 5*time.Second, 20*time.Millisecond, func() (bool, string) {
		if n := b.count(t, "GET /slow"); n != 1 {
			return false, fmt.Sprintf("backend b has %d slow requests, want 1", n)
		}
		return true, ""
	})
	if code, body := l.adminDo(t, "POST", "/admin/backends/"+b.addr+"/drain"); code != 200 || !strings.Contains(body, `"admin_drained": true`) {
		t.Fatalf("POST drain: %d %s, want 200 admin_drained", code, body)
	}
	if st := l.status(t)[b.addr]; st.State != "draining" || st.InRotation || st.InFlight != 1 {
		t.Errorf("b right after the drain: state %q in_rotation %v in_flight %d, want draining, out, 1 in flight",
			st.State, st.InRotation, st.InFlight)
	}
	for _, name := range l.sequence(t, 6) {
		if name != "a" {
			t.Fatalf("a new request reached the admin-drained backend %s", name)
		}
	}
	if code, _ := l.adminDo(t, "DELETE", "/admin/backends/"+a.addr); code != 409 {
		t.Errorf("DELETE a backend in rotation: %d, want 409", code)
	}
	for i := 0; i < 2; i++ {
		if got := <-codes; got != "200 in-flight" {
			t.Errorf("a request in flight when the admin drained its backend got %q, want 200", got)
		}
	}
	eventually(t, 5*time.Second, 20*time.Millisecond, func() (bool, string) {
		st := l.status(t)[b.addr]
		return st.InFlight == 0 && st.State == "draining", fmt.Sprintf("b: %q in_flight %d", st.State, st.InFlight)
	})
	if code, body := l.adminDo(t, "DELETE", "/admin/backends/"+b.addr); code != 204 {
		t.Fatalf("DELETE the drained backend: %d %s", code, body)
	}
	if _, ok := l.status(t)[b.addr]; ok {
		t.Errorf("the removed backend is still listed")
	}
	if code, _ := l.adminDo(t, "DELETE", "/admin/backends/"+b.addr); code != 404 {
		t.Errorf("DELETE it again: %d, want 404", code)
	}
	if got := tally(l.sequence(t, 3)); got["a"] != 3 {
		t.Errorf("after the removal: %v, want all to a", got)
	}
}
