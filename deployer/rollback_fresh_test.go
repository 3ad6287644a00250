package deployer

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
)

// slowServer writes a Python HTTP server that knows nothing of zero502 (drain: balancer): it
// answers every GET with its version at once and POST /slow after 3 s, and dies at once on
// SIGTERM (Python's default), as the drain: balancer contract allows.
func slowServer(t *testing.T, dir string) []string {
	t.Helper()
	script := filepath.Join(dir, "slow_server.py")
	src := `import http.server, sys, time
port, version = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def answer(self):
        body = (version + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.answer()
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        time.sleep(3)
        self.answer()
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"sh", "-c", "exec python3 " + script + " {port} {version}"}
}

// A host new to a serving fleet (host-c, fresh, beside host-a and host-b on v1) is rolled back to
// nothing when its post_traffic hook fails, while it is in rotation and serving slow requests.
// Its drain: balancer service leaves as any stop takes it out, drained at the balancer first: no
// request in flight to it fails (it was signalled at once, cutting them with 502s).
func TestAFreshHostRolledBackIsDrainedAtTheBalancerFirst(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 3)
	path := f.anyConfig("fleet.yaml", anyValues{Command: slowServer(t, f.dir), Strategy: config.StopFirst})
	two := f.load(path)
	two.Hosts = two.Hosts[:2]
	twoPath := f.write("two.yaml", two)
	f.startLB(path)
	ctx := context.Background()
	if _, err := f.deployer(f.load(twoPath), nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1 to host-a and host-b: %v", err)
	}

	cfg := f.load(path)
	cfg.Hooks.PostTraffic = config.Hook{Command: []string{"sh", "-c",
		`if [ "$ZERO502_HOST" = host-c ]; then sleep 1; echo "host-c refused on purpose" >&2; exit 7; fi`},
		Timeout: 10 * time.Second}
	hooked := f.write("hooked.yaml", cfg)

	// Once host-c (fresh, on v2) is back in rotation (its post_traffic hook then runs for 1 s and
	// fails), slow POSTs go through the LB: some land on host-c and are in flight, for 3 s, when
	// its rollback stops it.
	var mu sync.Mutex
	var results []string
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	post := func() {
		res := ""
		resp, err := client.Post("http://"+f.listen+"/slow", "text/plain", strings.NewReader("order"))
		if err != nil {
			res = "error: " + err.Error()
		} else {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			res = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		}
		mu.Lock()
		results = append(results, res)
		mu.Unlock()
	}
	var ev eventLog
	events := func(e Event) {
		ev.add(e)
		if e.Host == "host-c" && e.Step == stepInRotation && e.Version == "v2" {
			for range 6 {
				wg.Go(post)
			}
		}
	}
	rep, err := f.deployer(f.load(hooked), nil, Options{Events: events}).Deploy(ctx, "v2")
	wg.Wait()
	if err == nil || !strings.Contains(err.Error(), "hooks.post_traffic") {
		t.Fatalf("deploy v2 with host-c's post_traffic failing: %v; want it to fail there\n%s", err, &ev)
	}
	if c := rep.Hosts[2]; c.Outcome != report.OutcomeRolledBack {
		t.Fatalf("host-c: %s, want rolled back (to nothing)\n%s", c.Outcome, &ev)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(results) != 6 {
		t.Fatalf("slow requests: %q; want 6 answers (host-c never came into rotation?)\n%s", results, &ev)
	}
	var failed []string
	for _, r := range results {
		if !strings.HasPrefix(r, "200 ") {
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		t.Errorf("%d of 6 requests in flight failed while host-c was rolled back (drain: balancer): %q; want none\n%s",
			len(failed), failed, &ev)
	}
}
