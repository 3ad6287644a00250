package lb

import (
	"net/http"
	"strings"
	"testing"
)

// The admin listener refuses a body above adminapi.DefaultLimits.MaxBody with 413, before any
// handler reads it, and the backend it named is unchanged.
func TestAdminRefusesOversizedBody(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	body := `{"weight": 5` + strings.Repeat(" ", 2<<20) + `}`
	req, err := http.NewRequest(http.MethodPut, "http://"+l.AdminAddr()+"/admin/backends/"+a.addr()+"/weight", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 2 MiB weight write answered %d, want 413", resp.StatusCode)
	}
	for _, st := range l.Statuses() {
		if st.Address == a.addr() && st.Weight == 5 {
			t.Fatalf("the refused write took effect: %+v", st)
		}
	}
}
