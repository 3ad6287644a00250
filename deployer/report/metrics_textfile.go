package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Last-deploy results, the result label of zero502_deploy_last_result.
const (
	resultSucceeded = "succeeded" // every host on the version
	resultFailed    = "failed"    // the rollout stopped at a failed host
	resultRefused   = "refused"   // preflight refused it; nothing changed
)

// Result names how the deploy ended: resultSucceeded, resultFailed or resultRefused.
func (r Report) Result() string {
	switch {
	case r.Refused:
		return resultRefused
	case r.Error != "":
		return resultFailed
	default:
		return resultSucceeded
	}
}

// CheckMetricsTextfile checks a textfile path before a deploy, so a bad one is refused before
// anything changes: its name, and that a file can be written beside it (its directory is
// created, as WriteMetricsTextfile would; a file made there is removed at once).
func CheckMetricsTextfile(path string) error {
	if err := CheckMetricsTextfileName(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("metrics textfile %q: %w; give a path in a directory zero502 can write", path, err)
	}
	f, err := os.CreateTemp(dir, ".zero502-check-*")
	if err != nil {
		return fmt.Errorf("metrics textfile %q: %w; give a path in a directory zero502 can write", path, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// CheckMetricsTextfileName checks a textfile path's name alone (nothing is created): it must
// end in .prom.
func CheckMetricsTextfileName(path string) error {
	if filepath.Ext(path) != ".prom" {
		return fmt.Errorf("metrics textfile %q: must end in .prom, which is what node_exporter's textfile collector reads", path)
	}
	return nil
}

// WriteMetricsTextfile writes the deploy's outcome for node_exporter's textfile collector at
// path (a name ending .prom in its --collector.textfile.directory): the last deploy's result,
// start and duration, and per host its outcome, its step's duration and the floor the
// handshake needs (rollout.bake, plus drain.window for a handshake drain). The file is
// replaced atomically through client_golang's WriteToTextfile and readable by every user
// (0644); a missing directory is created.
func WriteMetricsTextfile(path string, rep Report) error {
	if err := CheckMetricsTextfile(path); err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	result := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "zero502_deploy_last_result",
		Help: "1 for how the last deploy ended (succeeded, failed, refused), 0 for the others; version is the version it deployed.",
	}, []string{"result", "version"})
	started := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "zero502_deploy_last_start_timestamp_seconds",
		Help: "When the last deploy started (Unix time).",
	})
	took := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "zero502_deploy_last_duration_seconds",
		Help: "How long the last deploy took, preflight to report.",
	})
	outcome := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "zero502_deploy_host_outcome",
		Help: "1 for the host's outcome in the last deploy (deployed, unchanged, rolled back, failed, not reached, untouched).",
	}, []string{"host", "outcome"})
	hostTook := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "zero502_deploy_host_duration_seconds",
		Help: "The host's step in the last deploy, lock to verified.",
	}, []string{"host"})
	floor := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "zero502_deploy_host_floor_seconds",
		Help: "What the handshake itself needs on the host: the bake, plus drain.window for a handshake drain (0: no floor).",
	}, []string{"host"})
	ratio := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "zero502_deploy_host_floor_ratio",
		Help: "The host's step duration over its floor (0 when there is no floor).",
	}, []string{"host"})
	reg.MustRegister(result, started, took, outcome, hostTook, floor, ratio)

	// A label value must be UTF-8 (WithLabelValues panics otherwise), and a deploy refused for
	// its --version still says so: a version that is not UTF-8 is written with U+FFFD in place.
	version := strings.ToValidUTF8(rep.Version, "\uFFFD")
	for _, r := range []string{resultSucceeded, resultFailed, resultRefused} {
		v := 0.0
		if r == rep.Result() {
			v = 1
		}
		result.WithLabelValues(r, version).Set(v)
	}
	started.Set(float64(rep.Started.UnixMilli()) / 1000)
	took.Set(rep.Duration.Seconds())
	for _, h := range rep.Hosts {
		outcome.WithLabelValues(h.Host, h.Outcome).Set(1)
		hostTook.WithLabelValues(h.Host).Set(h.Duration.Seconds())
		floor.WithLabelValues(h.Host).Set(h.Floor.Seconds())
		ratio.WithLabelValues(h.Host).Set(h.Ratio())
	}

	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { // node_exporter's textfile directory: its reader is another user
		return fmt.Errorf("metrics textfile %s: %w", path, err)
	}
	if err := prometheus.WriteToTextfile(path, reg); err != nil {
		return fmt.Errorf("metrics textfile %s: %w (check the directory is writable)", path, err)
	}
	return nil
}
