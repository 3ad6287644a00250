package spec

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// bigSpec is a spec of about 150 KiB at version: its services (more of them at v2, so the two
// versions differ in size too) each carry a large env value that names the version, so a
// reader can tell a whole spec of one version from a mix or a half.
func bigSpec(version string, services int) Spec {
	s := Spec{Host: "host-a", Version: version}
	pad := strings.Repeat(version+"-", 2048) // 6 KiB per service
	for i := range services {
		s.Services = append(s.Services, Service{Name: fmt.Sprintf("svc-%03d", i), Version: version,
			Command: []string{"app", "--version", version}, Port: 9000 + i, Env: map[string]string{"PAD": pad}})
	}
	return s
}

// consistent says what is wrong with a spec read back while v1 (20 services) and v2 (24) are
// published over each other, or "" when it is one of them, whole.
func consistent(s Spec) string {
	want := map[string]int{"v1": 20, "v2": 24}[s.Version]
	if want == 0 {
		return fmt.Sprintf("version %q, want v1 or v2", s.Version)
	}
	if len(s.Services) != want {
		return fmt.Sprintf("%s with %d services, want %d", s.Version, len(s.Services), want)
	}
	pad := strings.Repeat(s.Version+"-", 2048)
	for _, svc := range s.Services {
		if svc.Version != s.Version || svc.Env["PAD"] != pad {
			return fmt.Sprintf("%s holds service %s of version %q (env of %d bytes)", s.Version, svc.Name, svc.Version, len(svc.Env["PAD"]))
		}
	}
	return ""
}

// The spec is published atomically (docs/ARCHITECTURE.md, "Locks and the published spec"): a
// reader (the watchdog) that reads while the deployer publishes sees the old spec or the new one,
// whole, never half of either and never none. One writer publishes a spec of about 150 KiB over
// and over, v1 and v2 in turn, for a second while four readers read it in a loop.
func TestAReaderNeverSeesHalfAPublishedSpec(t *testing.T) {
	t.Parallel()
	p := Path(t.TempDir())
	specs := []Spec{bigSpec("v1", 20), bigSpec("v2", 24)}
	if err := Publish(p, specs[0]); err != nil {
		t.Fatal(err)
	}
	var (
		stop      atomic.Bool
		published atomic.Int64
		wg        sync.WaitGroup
		mu        sync.Mutex
		bad       []string
		seen      = map[string]int{}
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				s, err := Read(p)
				what := ""
				switch {
				case err != nil:
					what = err.Error()
				default:
					what = consistent(s)
				}
				mu.Lock()
				if what != "" && len(bad) < 5 {
					bad = append(bad, what)
				}
				if what == "" {
					seen[s.Version]++
				}
				mu.Unlock()
			}
		}()
	}
	// A second at least, and on until the readers saw both versions (a bound, not a claim on time).
	start := time.Now()
	for i := 1; ; i++ {
		if err := Publish(p, specs[i%2]); err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("publish %d: %v", i, err)
		}
		published.Add(1)
		mu.Lock()
		both := seen["v1"] > 0 && seen["v2"] > 0
		mu.Unlock()
		if time.Since(start) > time.Second && both || time.Since(start) > 15*time.Second {
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("a reader saw a spec that is neither v1 nor v2 whole while it was published %d times: %s",
			published.Load(), strings.Join(bad, "; "))
	}
	if seen["v1"] == 0 || seen["v2"] == 0 {
		t.Fatalf("the readers saw %v over %d publishes: want both versions read (the test's premise)", seen, published.Load())
	}
	t.Logf("%d publishes, reads %v", published.Load(), seen)
}
