package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/promtest"
)

// requireSamples fails for each series whose value in the textfile at path is not want's.
func requireSamples(t *testing.T, path string, want map[string]float64) {
	promtest.Require(t, path, want)
}

func TestMetricsTextfileOfASucceededDeploy(t *testing.T) {
	t.Parallel()
	start := time.Unix(1_700_000_000, 0)
	rep := Report{Version: "v2", Started: start, Duration: 42 * time.Second, Hosts: []HostReport{
		{Host: "web-1", Outcome: OutcomeDeployed, Duration: 15 * time.Second, Floor: 10 * time.Second},
		{Host: "web-2", Outcome: OutcomeUnchanged, Duration: time.Second},
	}}
	path := filepath.Join(t.TempDir(), "textfiles", "zero502_deploy.prom")
	if err := WriteMetricsTextfile(path, rep); err != nil {
		t.Fatal(err)
	}
	requireSamples(t, path, map[string]float64{
		`zero502_deploy_last_result{result="succeeded",version="v2"}`:   1,
		`zero502_deploy_last_result{result="failed",version="v2"}`:      0,
		`zero502_deploy_last_result{result="refused",version="v2"}`:     0,
		`zero502_deploy_last_start_timestamp_seconds`:                   1_700_000_000,
		`zero502_deploy_last_duration_seconds`:                          42,
		`zero502_deploy_host_outcome{host="web-1",outcome="deployed"}`:  1,
		`zero502_deploy_host_outcome{host="web-2",outcome="unchanged"}`: 1,
		`zero502_deploy_host_duration_seconds{host="web-1"}`:            15,
		`zero502_deploy_host_floor_seconds{host="web-1"}`:               10,
		`zero502_deploy_host_floor_ratio{host="web-1"}`:                 1.5,
		`zero502_deploy_host_floor_ratio{host="web-2"}`:                 0,
	})
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("textfile mode %o, want 644 (node_exporter runs as another user)", st.Mode().Perm())
	}

	// The next deploy replaces the file: a refused one names no host.
	if err := WriteMetricsTextfile(path, Report{Version: "v3", Refused: true, Error: "drift"}); err != nil {
		t.Fatal(err)
	}
	requireSamples(t, path, map[string]float64{`zero502_deploy_last_result{result="refused",version="v3"}`: 1})
	if data, _ := os.ReadFile(path); strings.Contains(string(data), "web-1") {
		t.Errorf("the refused deploy's textfile still names web-1:\n%s", data)
	}
}

func TestMetricsTextfileMustEndInProm(t *testing.T) {
	t.Parallel()
	err := WriteMetricsTextfile(filepath.Join(t.TempDir(), "deploy.txt"), Report{})
	if err == nil || !strings.Contains(err.Error(), "deploy.txt") || !strings.Contains(err.Error(), ".prom") {
		t.Fatalf("err = %v, want the path and the .prom rule named", err)
	}
}

// A textfile no file can be written beside is refused by the check before a deploy, naming the
// path, as the write after it would fail.
func TestMetricsTextfileInADirectoryThatCannotBeWrittenIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(notDir, "sub", "deploy.prom")
	if err := CheckMetricsTextfile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("CheckMetricsTextfile(%s) = %v, want it refused, naming the path", path, err)
	}
	ok := filepath.Join(dir, "textfile", "deploy.prom")
	if err := CheckMetricsTextfile(ok); err != nil {
		t.Fatalf("CheckMetricsTextfile(%s) = %v, want nil", ok, err)
	}
	if left, _ := os.ReadDir(filepath.Dir(ok)); len(left) != 0 {
		t.Errorf("the check left %v behind", left)
	}
}

// A deploy refused for its --version (one that is not UTF-8, which CheckVersion refuses) still
// has its outcome written: the textfile says refused, with the version as a valid label value,
// instead of client_golang panicking on the label after the deploy.
func TestMetricsTextfileOfADeployRefusedForAVersionThatIsNotUTF8(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "zero502_deploy.prom")
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("WriteMetricsTextfile panicked on the version %q: %v", "v\xff", p)
			}
		}()
		err = WriteMetricsTextfile(path, Report{Version: "v\xff", Refused: true, Error: `--version "v\xff": must be …`})
	}()
	if err != nil {
		t.Fatal(err)
	}
	requireSamples(t, path, map[string]float64{"zero502_deploy_last_result{result=\"refused\",version=\"v\ufffd\"}": 1})
}
