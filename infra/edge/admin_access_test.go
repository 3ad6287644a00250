package edge

import (
	"net/http"
	"strings"
	"testing"
)

// The edge's admin keeps the LB's access rule (adminapi.Access): with no token on loopback, a
// form POST and a rebound Host are refused and change nothing; a program's request passes.
func TestEdgeAdminRefusesWhatABrowserCanSend(t *testing.T) {
	a, b := startUpstream(t, "a"), startUpstream(t, "b")
	fwd := startForwarder(t, &Forwarder{Origins: []string{a.addr, b.addr}, Admin: "127.0.0.1:0", Check: looseChecks})
	url := "http://" + fwd.AdminAddr().String() + "/admin/upstreams/" + a.addr + "/drain"
	send := func(host, contentType string, program bool) (int, string) {
		req, err := http.NewRequest("POST", url, strings.NewReader("x=1"))
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		req.Header.Set("Content-Type", contentType)
		if program {
			req.Header.Set("X-Zero502-Admin", "1")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var sb strings.Builder
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		sb.Write(buf[:n])
		return resp.StatusCode, sb.String()
	}
	if code, body := send("", "application/x-www-form-urlencoded", false); code != http.StatusForbidden {
		t.Errorf("form POST drain: %d %q, want 403", code, body)
	}
	if code, body := send("evil.example", "application/json", true); code != http.StatusForbidden {
		t.Errorf("drain with Host evil.example: %d %q, want 403", code, body)
	}
	for _, u := range fwd.Upstreams() {
		if u.AdminDrained {
			t.Fatalf("a refused request drained %s", u.Address)
		}
	}
	if code, body := send("", "text/plain", true); code != http.StatusOK {
		t.Errorf("drain with the client header: %d %q, want 200", code, body)
	}
}
