package demo

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/zero502/zero502/deployer/measure"
)

// DefaultRate is the demo's load in requests per second unless told otherwise (`zero502 demo
// --rate`): pythonRate for ServicePython, and the traffic layer's own 200, when Mode.RateSet is
// false.
const DefaultRate = 400

// Mode is one `zero502 demo`, as its flags say it: which run (the handshake rollout, --naive,
// --compare, --traffic-layer or --bad-version) on what (--runtime, --service), under what load.
// Validate tells which combinations make a demo; RunMode runs it.
type Mode struct {
	// Naive rolls without the drain handshake (--naive); with TrafficLayer, every tier.
	Naive bool
	// Compare runs the handshake rollout, then the naive one (--compare).
	Compare bool
	// TrafficLayer runs the whole chain, DNS → edges → LB instances → apps (--traffic-layer):
	// runTraffic.
	TrafficLayer bool
	// BadVersion rolls a bad v2 that the canary stops (--bad-version): runBadVersion.
	BadVersion bool
	// Rate is the load in requests per second (--rate, DefaultRate); RateSet says it was given,
	// else ServicePython runs at pythonRate and TrafficLayer at its own default.
	Rate    int
	RateSet bool
	// Runtime is RuntimeProcess or RuntimeDocker (--runtime).
	Runtime string
	// Image and DockerHost are the docker runtime's (--image, --docker-host); ImageSet says
	// --image was given (any other runtime refuses it).
	Image      string
	ImageSet   bool
	DockerHost string
	// Service is ServiceApp or ServicePython (--service).
	Service string
	// Report names the HTML report's file (--report): only the handshake and naive runs make
	// one (Outcome.Runs; the command writes it).
	Report string
	// Progress receives live progress lines; nil: none.
	Progress io.Writer
	// Keep leaves the temp dir in place and names it (--keep).
	Keep bool
}

// Validate says whether m is a demo: nil, or an error naming the flags that do not go together or
// the value that is not one of the choices. Nothing runs.
func (m Mode) Validate() error {
	if m.BadVersion {
		for _, other := range []struct {
			name string
			set  bool
		}{{"naive", m.Naive}, {"compare", m.Compare}, {"traffic-layer", m.TrafficLayer}} {
			if other.set {
				return fmt.Errorf("--bad-version and --%s: pick one (--bad-version rolls a bad v2 with the handshake)", other.name)
			}
		}
		if m.Runtime != RuntimeProcess || m.Service != ServiceApp || m.Report != "" {
			return errors.New("--bad-version runs the embedded default (process runtime, zero502 app); it takes --rate, --json and --keep")
		}
	}
	if m.Naive && m.Compare {
		return errors.New("--naive and --compare: pick one (--compare already runs the naive rollout)")
	}
	if m.Runtime != RuntimeProcess && m.Runtime != RuntimeDocker {
		return fmt.Errorf("--runtime %q: must be %s or %s", m.Runtime, RuntimeProcess, RuntimeDocker)
	}
	if m.Runtime != RuntimeDocker && (m.ImageSet || m.DockerHost != "") {
		return errors.New("--image and --docker-host apply to --runtime docker only")
	}
	if err := measure.CheckRate("--rate", m.Rate); err != nil { // before anything starts, not when the load does
		return err
	}
	if m.BadVersion {
		return nil
	}
	if m.TrafficLayer {
		if m.Compare || m.Runtime != RuntimeProcess || m.Service != ServiceApp || m.Report != "" {
			return errors.New("--traffic-layer runs the process runtime and zero502 app alone; it takes --naive, --rate, --json and --keep")
		}
		return nil
	}
	if m.Service != ServiceApp && m.Service != ServicePython {
		return fmt.Errorf("--service %q: must be %s or %s", m.Service, ServiceApp, ServicePython)
	}
	if m.Service == ServicePython && m.Runtime != RuntimeProcess {
		return fmt.Errorf("--service %s runs with --runtime %s only", ServicePython, RuntimeProcess)
	}
	return nil
}

// Outcome is what a Mode's run gave: one of Bad (BadVersion), Traffic (TrafficLayer) or Runs
// (the handshake or naive run; with Compare the handshake run, then the naive one), as far as
// the runs got, and Err, what stopped one early.
type Outcome struct {
	Mode    Mode
	Bad     *badResult
	Traffic *trafficResult
	Runs    []*Result
	Err     error
}

// RunMode runs the demo m says (Validate first: its error, and nothing runs). A Ctrl-C (ctx done)
// stops it early; everything it started is stopped either way. The outcome holds what the
// runs saw; Failure says whether the demo passed.
func RunMode(ctx context.Context, m Mode) (*Outcome, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	o := &Outcome{Mode: m}
	switch {
	case m.BadVersion:
		o.Bad, o.Err = runBadVersion(ctx, badOptions{Rate: m.Rate, Progress: m.Progress, Keep: m.Keep})
	case m.TrafficLayer:
		opts := trafficOptions{Naive: m.Naive, Progress: m.Progress, Keep: m.Keep}
		if m.RateSet {
			opts.Rate = m.Rate
		}
		o.Traffic, o.Err = runTraffic(ctx, opts)
	default:
		rate := m.Rate
		if m.Service == ServicePython && !m.RateSet {
			rate = pythonRate // http.server is a modest server: the demo measures the deploy, not it
		}
		opts := Options{Rate: rate, Progress: m.Progress, Keep: m.Keep, Runtime: m.Runtime, Image: m.Image,
			DockerHost: m.DockerHost, Service: m.Service}
		naive := []bool{m.Naive}
		if m.Compare {
			naive = []bool{false, true}
		}
		for _, n := range naive {
			opts.Naive = n
			r, err := Run(ctx, opts)
			if r != nil {
				o.Runs = append(o.Runs, r)
			}
			if err != nil {
				o.Err = err
				break
			}
		}
	}
	return o, nil
}

// Failure is the demo's pass/fail rule: failed is false only when it passed, and err then says
// why when the printed result does not (the run's error; a bad version not stopped), else nil.
//
//   - the handshake run: it was clean (no failed request, every host on v2);
//   - Naive: the same, so a naive run that shows its failures fails;
//   - Compare: the handshake run was clean and the naive run's failures were seen;
//   - TrafficLayer: no request failed, no session was lost, every tier runs v2 (Naive too);
//   - BadVersion: the canary stopped it by a verdict, every host runs v1 again and the failures
//     are within the bound (badResult.Stopped).
func (o *Outcome) Failure() (failed bool, err error) {
	switch {
	case o.Err != nil:
		return true, o.Err
	case o.Mode.BadVersion:
		if o.Bad == nil {
			return true, nil
		}
		if !o.Bad.Stopped {
			return true, errors.New("--bad-version: " + o.Bad.Why)
		}
		return false, nil
	case o.Mode.TrafficLayer:
		return o.Traffic == nil || !o.Traffic.Clean(), nil
	case o.Mode.Compare:
		return !(len(o.Runs) == 2 && o.Runs[0].Clean() && o.Runs[1].Failed()), nil
	}
	return !(len(o.Runs) == 1 && o.Runs[0].Clean()), nil
}
