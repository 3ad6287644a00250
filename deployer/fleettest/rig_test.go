//go:build linux

package fleettest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/process"
	"github.com/zero502/zero502/internal/testrig/netfleet"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
	"github.com/zero502/zero502/internal/testrig/testmain"
)

// bin is the real zero502 binary, built once for the package: the deployers, the LB, the
// hosts' steps and watchdog ticks (over ssh) and the services on the hosts are all this binary.
var bin string

// The tests mostly wait on real timers (drain windows, health intervals, ssh keepalives), each
// on a fleet of its own: three run at once.
func TestMain(m *testing.M) {
	os.Exit(testmain.Run(m, testmain.Options{Binary: &bin, Parallel: 3, UnderLoad: true}))
}

// webPort is the web service's port on every host (each host has its own network stack).
const webPort = 8000

// fleet is one test's fleet of hosts on a real network, its config and its LB. The config file
// and logs live in dir; the hosts' state dirs under hosts, which a deployer "elsewhere" does not
// see at all.
type fleet struct {
	t      *testing.T
	nf     *netfleet.Fleet
	dir    string
	hosts  string
	cfg    *config.Config
	path   string
	listen string // the LB's listener, at the gateway
}

// newFleet builds n hosts and writes their config: the in-house LB at the fleet's gateway in
// front of the web service (the zero502 app on {address}:8000 of each host, reached over ssh),
// the process runtime, fast numbers that keep every invariant, then edit's changes. The LB is
// not started (startLB).
func newFleet(t *testing.T, n int, edit func(*config.Config)) *fleet {
	t.Helper()
	nf := netfleet.ForTest(t, n)
	f := &fleet{t: t, nf: nf, dir: t.TempDir()}
	f.hosts = filepath.Join(f.dir, "hosts")
	if err := os.MkdirAll(f.hosts, 0o755); err != nil {
		t.Fatal(err)
	}
	ps := tcpserver.FreePorts(t, 2)
	f.listen = net.JoinHostPort(nf.Gateway, strconv.Itoa(ps[0]))
	token := make([]byte, 12)
	_, _ = rand.Read(token)

	cfg := config.Defaults()
	cfg.Balancer.Kind = config.BalancerInHouse
	cfg.Balancer.Listen, cfg.Balancer.Admin = f.listen, net.JoinHostPort(nf.Gateway, strconv.Itoa(ps[1]))
	cfg.Balancer.AdminToken = hex.EncodeToString(token) // the admin API is off loopback: the hosts' steps use it
	cfg.Balancer.Service = "web"
	cfg.Balancer.Interval, cfg.Balancer.Timeout = 200*time.Millisecond, 150*time.Millisecond
	cfg.Balancer.UnhealthyThreshold, cfg.Balancer.HealthyThreshold = 2, 2
	cfg.Balancer.IdleTimeout = 5 * time.Second
	cfg.Drain = config.Drain{Window: time.Second, Shutdown: time.Second, StopGrace: 4 * time.Second, MaxRecovery: 2 * time.Second}
	cfg.Watchdog.Interval, cfg.Watchdog.HealAfter, cfg.Watchdog.StateDir = time.Second, 4, f.hosts
	cfg.App.KeepAliveIdleTimeout = 10 * time.Second
	cfg.Rollout.Runtime = config.RuntimeProcess
	cfg.Rollout.Batch = 4
	cfg.Rollout.HealthyDeadline = 15 * time.Second
	cfg.Rollout.Analysis.Enabled = false // and with it the canary: these tests are about the network
	cfg.Services = []config.Service{{Name: "web", Port: webPort, Verify: config.ServiceVerify{VersionHeader: "X-Version"},
		Command: []string{"{self}", "app", "--version", "{version}", "--port", "{port}", "--host", "{address}",
			"--drain", "{drain}", "--shutdown", "{shutdown}", "--idle-timeout", "{idle_timeout}"}}}
	for _, h := range nf.Hosts {
		cfg.Hosts = append(cfg.Hosts, config.Host{Name: h.Name, SSH: h.SSH, Address: h.Address, StateDir: filepath.Join(f.hosts, h.Name)})
	}
	if edit != nil {
		edit(cfg)
	}
	f.path = filepath.Join(f.dir, "fleet.yaml")
	f.write(f.path, cfg)
	loaded, err := config.Load(f.path)
	if err != nil {
		t.Fatalf("the fleet's config: %v", err)
	}
	f.cfg = loaded
	return f
}

// fresh deploys version to the whole fleet at once, as its first deploy (nothing runs, so no batch
// drains anything: one batch spares the deployer its wait, before each next batch, for every
// host that does not serve yet), and requires it to succeed.
func (f *fleet) fresh(version string) {
	f.t.Helper()
	cfg := *f.cfg
	cfg.Rollout.Batch = max(len(cfg.Hosts)-1, 1) // I8 keeps a host out of the first batch, even on a fresh fleet
	path := filepath.Join(f.dir, "fresh.yaml")
	f.write(path, &cfg)
	r := f.deploy(version, how{config: path})
	if rep, code := r.wait(); code != 0 || !rep.OK() {
		f.t.Fatalf("first deploy %s: exit %d, want 0 with every host on it\n%s\n%s", version, code, reportText(rep), tail2(r.out.String(), 6000))
	}
}

// write encodes cfg into path, readable by its owner alone: it holds the LB's admin token.
func (f *fleet) write(path string, cfg *config.Config) {
	f.t.Helper()
	data, err := config.Encode(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// host is the fleet's host named name.
func (f *fleet) host(name string) *netfleet.Host {
	f.t.Helper()
	for _, h := range f.nf.Hosts {
		if h.Name == name {
			return h
		}
	}
	f.t.Fatalf("no host %s", name)
	return nil
}

// startLB runs `zero502 lb --config` until the test ends (stopped before the fleet goes) and
// waits for its admin API.
func (f *fleet) startLB() {
	f.t.Helper()
	logPath := filepath.Join(f.dir, "lb.log")
	logf, err := os.Create(logPath)
	if err != nil {
		f.t.Fatal(err)
	}
	cmd := exec.Command(bin, "lb", "--config", f.path)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	testmain.Track(f.t, func() {
		_ = cmd.Process.Kill()
		<-exited
		logf.Close()
		if f.t.Failed() {
			f.t.Logf("lb log (tail):\n%s", tail(logPath, 3000))
		}
	})
	poll.UntilNil(f.t, 30*time.Second, "the LB's admin API answers", func() error {
		select {
		case <-exited:
			return fmt.Errorf("zero502 lb exited: %s", tail(logPath, 2000))
		default:
		}
		req, _ := http.NewRequest(http.MethodGet, "http://"+f.cfg.Balancer.Admin+"/admin/health", nil)
		req.Header.Set("Authorization", "Bearer "+f.cfg.Balancer.AdminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("admin health: %s", resp.Status)
		}
		return nil
	})
}

// elsewhere runs args on "another machine": a mount namespace of its own where the hosts' state
// dirs are an empty tmpfs, so a deployer there shares no file with the hosts and reaches them
// over ssh only. The pid stays the command's (unshare and sh exec it).
func (f *fleet) elsewhere(args ...string) []string {
	return append([]string{"unshare", "-m", "sh", "-c", `mount -t tmpfs tmpfs "$1" && shift && exec "$@"`, "sh", f.hosts}, args...)
}

// command is args (a zero502 command line after the binary) as a process, its ssh pointed at the
// fleet, run elsewhere (another machine, elsewhere) when asked.
func (f *fleet) command(other bool, args ...string) *exec.Cmd {
	argv := append([]string{bin}, args...)
	if other {
		argv = f.elsewhere(argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), f.nf.Env())
	return cmd
}

// exec runs argv (with the fleet's ssh environment) and returns its combined output.
func (f *fleet) exec(argv ...string) (string, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), f.nf.Env())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// deployRun is a `zero502 deploy --json` running.
type deployRun struct {
	f       *fleet
	version string
	cmd     *exec.Cmd
	out     *syncbuffer.Buffer // everything it printed, stdout and stderr
	done    chan struct{}
	report  *report.Report
	code    int
}

// how a deploy is run.
type how struct {
	// other runs the deployer on another machine (elsewhere).
	other bool
	// onEvent sees each event as the deployer prints it (on the reader's goroutine: no Fatal).
	onEvent func(deployer.Event)
	// args are extra deploy flags.
	args []string
	// config is the config file when not the fleet's.
	config string
}

// deploy starts `zero502 deploy --config F --version V --remote-binary BIN --json`.
func (f *fleet) deploy(version string, h how) *deployRun {
	f.t.Helper()
	config := f.path
	if h.config != "" {
		config = h.config
	}
	args := append([]string{"deploy", "--config", config, "--version", version, "--remote-binary", bin, "--json"}, h.args...)
	r := &deployRun{f: f, version: version, cmd: f.command(h.other, args...), out: &syncbuffer.Buffer{}, done: make(chan struct{})}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	r.cmd.Stderr = r.out
	if err := r.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	testmain.Track(f.t, func() { _ = r.cmd.Process.Kill(); <-r.done })
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 8*1024*1024)
		for sc.Scan() {
			line := sc.Bytes()
			r.out.Write(append(append([]byte(nil), line...), '\n'))
			var l struct {
				deployer.Event
				Report *report.Report `json:"report"`
			}
			if json.Unmarshal(line, &l) != nil {
				continue
			}
			if l.Report != nil {
				r.report = l.Report
				continue
			}
			if l.Step != "" && h.onEvent != nil {
				h.onEvent(l.Event)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		err := r.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			r.code = ee.ExitCode()
		case err != nil:
			r.code = -1
		}
	}()
	return r
}

// wait waits for the deploy to end (within 3 minutes) and returns its report and exit code.
func (r *deployRun) wait() (*report.Report, int) {
	r.f.t.Helper()
	select {
	case <-r.done:
	case <-time.After(3 * time.Minute):
		r.f.t.Fatalf("deploy %s still runs after 3 minutes:\n%s", r.version, tail2(r.out.String(), 6000))
	}
	if r.report == nil {
		r.f.t.Fatalf("deploy %s (exit %d) printed no report:\n%s", r.version, r.code, tail2(r.out.String(), 6000))
	}
	return r.report, r.code
}

// deployed runs a deploy of version to its end and requires it to succeed: exit 0, every host
// on version.
func (f *fleet) deployed(version string, h how) *report.Report {
	f.t.Helper()
	r := f.deploy(version, h)
	rep, code := r.wait()
	if code != 0 || !rep.OK() {
		f.t.Fatalf("deploy %s: exit %d, want 0 with every host on it\n%s\n%s", version, code, reportText(rep), tail2(r.out.String(), 6000))
	}
	return rep
}

// status runs `zero502 status --json` (elsewhere when other) and returns its status and exit code.
func (f *fleet) status(other bool) (*deployer.FleetStatus, int, string) {
	f.t.Helper()
	out, err := f.command(other, "status", "--config", f.path, "--remote-binary", bin, "--json").Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		f.t.Fatalf("zero502 status: %v", err)
	}
	var st struct {
		OK     bool                  `json:"ok"`
		Status *deployer.FleetStatus `json:"status"`
	}
	if err := json.Unmarshal(out, &st); err != nil || st.Status == nil {
		f.t.Fatalf("zero502 status --json (exit %d): %v\n%s%s", code, err, out, stderrOf(err))
	}
	return st.Status, code, string(out)
}

// hostStatus is host's entry of st.
func hostStatus(st *deployer.FleetStatus, host string) deployer.HostStatus {
	for _, h := range st.Hosts {
		if h.Host == host {
			return h
		}
	}
	return deployer.HostStatus{}
}

// running is what each host really runs of the web service, read from its runtime's records on
// its state dir, as the test (not any deployer) sees them: the version, "" when nothing runs,
// "v1+v2" when two instances run.
func (f *fleet) running() map[string]string {
	out := map[string]string{}
	for _, h := range f.cfg.Hosts {
		var vs []string
		for _, in := range f.records(h, "web") {
			if in.Running() {
				vs = append(vs, in.Version)
			}
		}
		sort.Strings(vs)
		out[h.Name] = strings.Join(vs, "+")
	}
	return out
}

// records are host h's instances of service, running or not, from its process runtime's
// records (read only); an unreadable record is one instance of version "unreadable: …".
func (f *fleet) records(h config.Host, service string) []runtime.Instance {
	rt, err := process.New(h.StateDir)
	if err == nil {
		var insts []runtime.Instance
		if insts, err = rt.List(context.Background(), runtime.Filter{Service: service}); err == nil {
			return insts
		}
	}
	return []runtime.Instance{{Version: "unreadable: " + err.Error(), State: runtime.StateRunning}}
}

// sightings records every version each host was seen running (from its runtime's records,
// every 20ms), "" included when nothing ran, until stop.
type sightings struct {
	mu   sync.Mutex
	seen map[string]map[string]bool
	end  chan struct{}
	done chan struct{}
}

func (f *fleet) watchVersions() *sightings {
	s := &sightings{seen: map[string]map[string]bool{}, end: make(chan struct{}), done: make(chan struct{})}
	look := func() {
		for host, v := range f.running() {
			s.mu.Lock()
			if s.seen[host] == nil {
				s.seen[host] = map[string]bool{}
			}
			for _, one := range strings.Split(v, "+") {
				s.seen[host][one] = true
			}
			s.mu.Unlock()
		}
	}
	look()
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.end:
				look()
				return
			case <-time.After(20 * time.Millisecond):
				look()
			}
		}
	}()
	f.t.Cleanup(func() { s.stop() })
	return s
}

// stop ends the sightings (once more looked at) and returns them.
func (s *sightings) stop() map[string]map[string]bool {
	select {
	case <-s.end:
	default:
		close(s.end)
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

// requireHonest fails t when rep says a host runs a version it was never seen running, when a
// host whose outcome is known does not run what the report says (truth: f.running() after the
// deploy), or when a host the deployer lost says any version at all.
func requireHonest(t *testing.T, name string, rep *report.Report, seen map[string]map[string]bool, truth map[string]string) {
	t.Helper()
	for _, h := range rep.Hosts {
		if h.Running != "" && !seen[h.Host][h.Running] {
			t.Errorf("%s: the report says %s runs %q, which it was never seen running (seen: %v)", name, h.Host, h.Running, keys(seen[h.Host]))
		}
		switch {
		case h.Outcome == report.OutcomeUnknown:
			if h.Running != "" {
				t.Errorf("%s: %s is %q yet the report says it runs %q", name, h.Host, h.Outcome, h.Running)
			}
		case truth != nil && h.Running != truth[h.Host]:
			t.Errorf("%s: the report says %s (%s) runs %q; it runs %q", name, h.Host, h.Outcome, h.Running, truth[h.Host])
		}
	}
}

// settled waits until no host lock is held and every host is readable over ssh, so that a host
// whose step was lost has finished rolling itself back: then zero502 status tells the truth.
func (f *fleet) settled(within time.Duration) *deployer.FleetStatus {
	f.t.Helper()
	var st *deployer.FleetStatus
	began := time.Now()
	defer func() { f.t.Logf("settled after %s", time.Since(began).Round(time.Millisecond)) }()
	poll.UntilNil(f.t, within, "every host reachable and its lock free", func() error {
		st, _, _ = f.status(false)
		for _, h := range st.Hosts {
			if h.LockHeldBy != "" {
				return fmt.Errorf("%s: lock held by %s", h.Host, h.LockHeldBy)
			}
			for _, p := range h.Problems {
				if strings.Contains(p, "ssh") {
					return fmt.Errorf("%s: %s", h.Host, p)
				}
			}
		}
		return nil
	})
	return st
}

// shot is one request of a load and how it ended.
type shot struct {
	method, path string
	start, end   time.Time
	status       int
	err          error
	backend      string // X-Backend of the answer: the host address:port that served it
}

func (s shot) failed() bool { return s.err != nil || s.status < 200 || s.status > 399 }

func (s shot) String() string {
	what := strconv.Itoa(s.status)
	if s.err != nil {
		what = s.err.Error()
	}
	return fmt.Sprintf("%s %s at %s after %s: %s", s.method, s.path, s.start.Format("15:04:05.000"), s.end.Sub(s.start).Round(time.Millisecond), what)
}

// kind is a kind of request of a load, sent weight times in every sum of the weights.
type kind struct {
	method, path string
	weight       int
}

// load is an open-loop load through the LB: rate requests per second whatever the answers, each
// on its own goroutine, a fifth of them on a new connection, the rest on reused keep-alive ones.
type load struct {
	mu    sync.Mutex
	shots []shot
	end   chan struct{}
	wg    sync.WaitGroup
}

func startLoad(t *testing.T, target string, rate int, kinds ...kind) *load {
	t.Helper()
	l := &load{end: make(chan struct{})}
	reused := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 4 * time.Second}}
	fresh := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var plan []kind
	for _, k := range kinds {
		for range k.weight {
			plan = append(plan, k)
		}
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-l.end:
				return
			case <-tick.C:
			}
			k := plan[n%len(plan)]
			client := reused
			if n%5 == 4 {
				client = fresh
			}
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				l.send(client, target, k, n)
			}()
		}
	}()
	t.Cleanup(func() { l.stop() })
	return l
}

func (l *load) send(c *http.Client, target string, k kind, n int) {
	var body io.Reader
	if k.method == http.MethodPost {
		body = strings.NewReader(`{"item":1}`)
	}
	req, _ := http.NewRequest(k.method, "http://"+target+k.path, body)
	if k.method == http.MethodPost {
		req.Header.Set("Idempotency-Key", fmt.Sprintf("netfleet-%d-%d", time.Now().UnixNano(), n))
	}
	s := shot{method: k.method, path: k.path, start: time.Now()}
	resp, err := c.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		s.status, s.backend = resp.StatusCode, resp.Header.Get("X-Backend")
	}
	s.err, s.end = err, time.Now()
	l.mu.Lock()
	l.shots = append(l.shots, s)
	l.mu.Unlock()
}

// stop ends the load, waits for the requests in flight and returns every request's end.
func (l *load) stop() []shot {
	select {
	case <-l.end:
	default:
		close(l.end)
	}
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.shots)
}

// failures are the shots that failed, those of method only when method is not "".
func failures(shots []shot, method string) []shot {
	var out []shot
	for _, s := range shots {
		if s.failed() && (method == "" || s.method == method) {
			out = append(out, s)
		}
	}
	return out
}

// list renders up to 20 shots, one a line.
func list(shots []shot) string {
	var b strings.Builder
	for i, s := range shots {
		if i == 20 {
			fmt.Fprintf(&b, "  … and %d more\n", len(shots)-20)
			break
		}
		fmt.Fprintf(&b, "  %s\n", s)
	}
	return b.String()
}

// outcomes maps each host of rep to its outcome.
func outcomes(rep *report.Report) map[string]string {
	out := map[string]string{}
	for _, h := range rep.Hosts {
		out[h.Host] = h.Outcome
	}
	return out
}

// reportText is rep as the deploy command prints it for people.
func reportText(rep *report.Report) string {
	if rep == nil {
		return "(no report)"
	}
	var b strings.Builder
	_ = rep.WriteText(&b)
	return b.String()
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, fmt.Sprintf("%q", k))
	}
	sort.Strings(out)
	return out
}

func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	return tail2(string(data), n)
}

func tail2(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return "\nstderr: " + string(ee.Stderr)
	}
	return ""
}
