package deployer

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/deployer/ssh"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/infra/ports"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
	"github.com/zero502/zero502/internal/testrig/testmain"
)

// sshd is a real OpenSSH server on 127.0.0.1, with keys made by the tests, shared by every test
// of the package that reaches hosts over ssh (each has its own fleet, so its own state dirs), so
// the tests need not each start one: ZERO502_SSH_OPTS, which points the deployer's ssh at it, is
// set once for the whole test binary, never per test.
type sshd struct {
	port int
	dir  string
}

var (
	sharedSSHDOnce sync.Once
	sharedSSHD     *sshd
	sharedSSHDErr  error
)

// startSSHD skips (fails under CI) when sshd cannot run here, and otherwise returns the
// package's sshd, started on first use and stopped when the tests end.
func startSSHD(t *testing.T) *sshd {
	t.Helper()
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("sshd not installed (apt-get install openssh-server): %v", err)
		}
		t.Skip("/usr/sbin/sshd not installed (apt-get install openssh-server)")
	}
	if os.Geteuid() != 0 {
		t.Skip("starting sshd as a test needs root")
	}
	sharedSSHDOnce.Do(func() { sharedSSHD, sharedSSHDErr = launchSSHD() })
	if sharedSSHDErr != nil {
		t.Fatalf("sshd: %v", sharedSSHDErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			data, _ := os.ReadFile(filepath.Join(sharedSSHD.dir, "sshd.log"))
			t.Logf("sshd log (tail, shared by the package's ssh tests):\n%s", tail(string(data), 3000))
		}
	})
	return sharedSSHD
}

// launchSSHD makes the keys and config, starts sshd, points ZERO502_SSH_OPTS at it and waits
// until a login works.
func launchSSHD() (*sshd, error) {
	dir, err := os.MkdirTemp("", "zero502-sshd-")
	if err != nil {
		return nil, err
	}
	ps, err := ports.Free(1) // below the ephemeral range: no outgoing connection takes it first
	if err != nil {
		return nil, err
	}
	s := &sshd{dir: dir, port: ps[0]}
	for _, k := range []string{"host_key", "client_key"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(s.dir, k)).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ssh-keygen: %w\n%s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(s.dir, "client_key.pub"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(s.dir, "authorized_keys"), pub, 0o600); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PidFile %s
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
MaxStartups 100:30:200
MaxSessions 100
LogLevel VERBOSE
`, s.port, filepath.Join(s.dir, "host_key"), filepath.Join(s.dir, "authorized_keys"), filepath.Join(s.dir, "sshd.pid"))
	if err := os.WriteFile(filepath.Join(s.dir, "sshd_config"), []byte(conf), 0o600); err != nil {
		return nil, err
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // its privilege separation dir
		return nil, err
	}
	logf, err := os.Create(filepath.Join(s.dir, "sshd.log"))
	if err != nil {
		return nil, err
	}
	// sshd runs in a mount namespace of its own where root's home is an empty directory, as on
	// a fresh server: the logins then skip this machine's shell start-up (root's .bashrc here
	// runs pyenv, 1–2s of CPU a login), so the ssh tests can run beside the parallel ones.
	home := filepath.Join(s.dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		return nil, err
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "slave", "sh", "-c", `mount --bind "$1" "$2" && shift 2 && exec "$@"`,
		"sh", home, rootHome(), "/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(s.dir, "sshd_config"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start sshd: %w", err)
	}
	testmain.AtExit(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		logf.Close()
		os.RemoveAll(s.dir)
	})
	os.Setenv(ssh.OptsEnv, strings.Join([]string{"-F", "/dev/null", "-i", filepath.Join(s.dir, "client_key"),
		"-o", "IdentitiesOnly=yes", "-o", "UserKnownHostsFile=" + filepath.Join(s.dir, "known_hosts"),
		"-o", "StrictHostKeyChecking=accept-new", "-o", "LogLevel=ERROR"}, " "))
	deadline := time.Now().Add(20 * time.Second)
	for {
		ssh, err := ssh.Command("", s.target(), "true")
		if err != nil {
			return nil, err
		}
		out, err := ssh.CombinedOutput()
		if err == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no login within 20s: %w: %s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rootHome is the home directory of root, the user the tests log in as.
func rootHome() string {
	if u, err := user.Lookup("root"); err == nil && u.HomeDir != "" {
		return u.HomeDir
	}
	return "/root"
}

func (s *sshd) target() string { return "root@127.0.0.1:" + strconv.Itoa(s.port) }

// remoteConfig writes fleet f's config with its first `remote` hosts reached over ssh.
func (f *fleet) remoteConfig(s *sshd, name string, remote int) (string, *config.Config) {
	f.t.Helper()
	cfg := f.load(f.config(name, defaultValues()))
	for i := range remote {
		cfg.Hosts[i].SSH, cfg.Hosts[i].Address = s.target(), "127.0.0.1"
	}
	path := f.write(name, cfg)
	cfg = f.load(path)
	for i := range remote {
		if cfg.Hosts[i].SSH == "" {
			f.t.Fatalf("host %s has no ssh in %s", hostName(i), path)
		}
	}
	return path, cfg
}

// Two hosts over real SSH and one local, behind the real LB: v1 fresh, then v2 under load with
// no failed request; the remote steps' events come back and every host ends on v2.
func TestFleetOverSSHRollsUnderLoad(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 3)
	path, cfg := f.remoteConfig(s, "ssh.yaml", 2)
	f.startLB(path)
	ctx := context.Background()
	opts := Options{RemoteBinary: bin}

	var ev1 eventLog
	rep, err := f.deployer(cfg, &ev1, opts).Deploy(ctx, "v1")
	if err != nil {
		t.Fatalf("first deploy: %v\nevents:\n%s", err, &ev1)
	}
	for _, h := range rep.Hosts {
		if h.Outcome != report.OutcomeDeployed || h.Running != "v1" {
			t.Errorf("first deploy %s: %s, runs %q; want deployed v1", h.Host, h.Outcome, h.Running)
		}
	}

	load := startTraffic(t, f.listen, 3)
	watchdogs := tickWatchdogs(t, cfg, path)
	var ev2 eventLog
	rep, err = f.deployer(cfg, &ev2, opts).Deploy(ctx, "v2")
	ticks := watchdogs()
	load.requireClean(t)
	if err != nil {
		t.Fatalf("rolling deploy: %v\nevents:\n%s", err, &ev2)
	}
	// The watchdog ran on every host through the deploy and never fought it: it met the
	// deploy's lock and stood aside, and it healed nothing.
	if strings.Contains(ticks, `"msg":"heal"`) || strings.Contains(ticks, `"msg":"heal failed`) {
		t.Errorf("a watchdog acted during the deploy:\n%s", ticks)
	}
	for _, h := range cfg.Hosts {
		if !strings.Contains(ticks, "["+h.Name+" tick ok]") {
			t.Errorf("no watchdog tick ran to the end on %s:\n%s", h.Name, ticks)
		}
	}
	if !strings.Contains(ticks, "host lock held; skipping this tick") {
		t.Errorf("no watchdog tick met the deploy's lock:\n%s", ticks)
	}
	var text strings.Builder
	rep.WriteText(&text)
	t.Logf("report:\n%s", &text)
	for _, h := range rep.Hosts {
		tl := h.Timeline
		requireDeployed(t, h, "v1", "v2")
		if tl.DrainStarted.IsZero() || tl.LeftRotation.IsZero() || tl.BackInRotation.IsZero() {
			t.Errorf("%s: handshake timeline incomplete: %s\nevents:\n%s", h.Host, tl, &ev2)
		}
	}
	for host, v := range f.versions() {
		if v != "v2" {
			t.Errorf("%s runs %q, want v2", host, v)
		}
	}
	// status reads the hosts over ssh there, and their targets at the balancer from here.
	st, err := Status(ctx, cfg, Options{RemoteBinary: bin, Self: bin})
	if err != nil || !st.OK() {
		t.Errorf("status after the deploy: %v, %+v; want every host agreeing", err, st)
	}
	for _, hs := range st.Hosts {
		if hs.Published != "v2" || len(hs.Services) == 0 || len(hs.Services[0].Instances) != 1 ||
			hs.Services[0].Instances[0].Version != "v2" || hs.Services[0].Instances[0].Balancer == nil {
			t.Errorf("status of %s: %+v; want v2 published and running, with the balancer's view", hs.Host, hs)
		}
	}
	// logs and stop of a host reached over ssh run there (zero502 host logs / host stop).
	var remote string
	for _, h := range cfg.Hosts {
		if h.SSH != "" {
			remote = h.Name
			break
		}
	}
	var out strings.Builder
	if err := Logs(ctx, cfg, remote, "web", false, &out, Options{RemoteBinary: bin}); err != nil || !strings.Contains(out.String(), "== zero502") {
		t.Errorf("logs of %s over ssh: %v\n%.300s", remote, err, out.String())
	}
	var evStop eventLog
	if err := Stop(ctx, cfg, StopTarget{Host: remote}, Options{RemoteBinary: bin, Events: evStop.add}); err != nil {
		t.Fatalf("stop %s over ssh: %v\nevents:\n%s", remote, err, &evStop)
	}
	if v := f.versions()[remote]; v != "" {
		t.Errorf("%s still runs %q after stop over ssh\nevents:\n%s", remote, v, &evStop)
	}
	if !strings.Contains(evStop.String(), remote+"/web drain") {
		t.Errorf("stop over ssh relayed no drain event:\n%s", &evStop)
	}
	log := ev2.String()
	for _, want := range []string{"host-a/ locked", "host-a/web drain", "host-b/web start", "host-b/ verified", "host-c/ verified"} {
		if !strings.Contains(log, want) {
			t.Errorf("events lack %q (relayed from the remote step):\n%s", want, log)
		}
	}
}

// tickWatchdogs runs `zero502 watchdog` on every host of cfg every 300 ms, as the systemd timer
// installed there would (on an ssh host through ssh, so it is the host's own tick), until the
// returned stop is called; stop returns everything the ticks logged, each tick closed by a line
// "[HOST tick ok]" or "[HOST tick failed: …]".
func tickWatchdogs(t *testing.T, cfg *config.Config, path string) (stop func() string) {
	t.Helper()
	var (
		mu   sync.Mutex
		logs strings.Builder
		wg   sync.WaitGroup
	)
	done := make(chan struct{})
	for _, h := range cfg.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := ssh.ShellQuote(bin) + " watchdog --config " + ssh.ShellQuote(path) + " --host " + ssh.ShellQuote(h.Name)
			for {
				cmd := exec.Command("sh", "-c", tick)
				if h.SSH != "" {
					var err error
					if cmd, err = ssh.Command("", h.SSH, tick); err != nil {
						t.Errorf("watchdog on %s: %v", h.Name, err)
						return
					}
				}
				out, err := cmd.CombinedOutput()
				end := "[" + h.Name + " tick ok]\n"
				if err != nil {
					end = fmt.Sprintf("[%s tick failed: %v]\n", h.Name, err)
				}
				mu.Lock()
				logs.Write(out)
				logs.WriteString(end)
				mu.Unlock()
				select {
				case <-done:
					return
				case <-time.After(300 * time.Millisecond):
				}
			}
		}()
	}
	return func() string {
		close(done)
		wg.Wait()
		return logs.String()
	}
}

// An unreachable remote host is refused in preflight, naming the host and ssh's error.
func TestUnreachableRemoteHostIsRefused(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 2)
	_, cfg := f.remoteConfig(s, "ssh.yaml", 1)
	cfg.Hosts[0].SSH = "root@127.0.0.1:" + strconv.Itoa(tcpserver.FreePorts(t, 1)[0]) // nobody listens
	_, err := f.deployer(cfg, nil, Options{RemoteBinary: bin, Balancer: balancer.None{}}).Deploy(context.Background(), "v1")
	if err == nil || !strings.Contains(err.Error(), "refused before anything changed") ||
		!strings.Contains(err.Error(), "host host-a: ssh") || !strings.Contains(err.Error(), "onnection refused") {
		t.Fatalf("deploy through a dead ssh port: %v; want a refusal naming host-a and ssh's error", err)
	}
}

// The ssh client dies mid-step: the deploy fails naming the host; on the host, the step sees its
// deployer gone, rolls back to v1 and exits, which frees the host's lock.
func TestLostSSHConnectionFailsTheStepAndFreesTheLock(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 2)
	_, cfg := f.remoteConfig(s, "ssh.yaml", 1)
	f.startLB(filepath.Join(f.dir, "ssh.yaml"))
	pids := filepath.Join(f.dir, "ssh.pids")
	wrapper := f.sshWrapper("echo $$ >> " + pids)
	opts := Options{RemoteBinary: bin, SSH: wrapper}
	if _, err := f.deployer(cfg, nil, opts).Deploy(context.Background(), "v1"); err != nil {
		t.Fatalf("first deploy: %v", err)
	}

	var ev eventLog
	killed := false
	d := f.deployer(cfg, nil, opts)
	d.opts.Events = func(e Event) {
		ev.add(e)
		if e.Host == "host-a" && e.Step == stepStart && !killed {
			killed = true
			data, _ := os.ReadFile(pids)
			lines := strings.Fields(string(data))
			pid, _ := strconv.Atoi(lines[len(lines)-1])
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	rep, err := d.Deploy(context.Background(), "v2")
	if !killed {
		t.Fatalf("the step never started a new instance: %v\n%s", err, &ev)
	}
	if err == nil || !strings.Contains(err.Error(), "host host-a") {
		t.Fatalf("deploy with its ssh killed: %v; want an error naming host-a\n%s", err, &ev)
	}
	if rep.Hosts[0].Outcome != report.OutcomeUnknown || rep.Hosts[1].Outcome != report.OutcomeNotReached {
		t.Errorf("outcomes %s, %s; want unknown (lost after its step began), not reached", rep.Hosts[0].Outcome, rep.Hosts[1].Outcome)
	}
	lockPath := cfg.HostLockPath(cfg.Hosts[0])
	poll.UntilNil(t, 60*time.Second, "host-a's lock is free (its step exited)", func() error {
		l, err := hostlock.TryAcquire(lockPath, hostlock.Holder{Who: "test", PID: os.Getpid()})
		if err != nil {
			return err
		}
		return l.Release()
	})
	poll.UntilNil(t, 10*time.Second, "host-a runs v1 again (rolled back on the host)", func() error {
		if v := f.versions()["host-a"]; v != "v1" {
			return fmt.Errorf("runs %q", v)
		}
		return nil
	})
	if v := f.versions()["host-b"]; v != "v1" {
		t.Errorf("host-b runs %q, want v1 (not reached)", v)
	}
}

// sshWrapper writes an ssh client for Options.SSH that runs the shell line first (to record
// what the deployer does) and then the real ssh with the same arguments.
func (f *fleet) sshWrapper(line string) string {
	f.t.Helper()
	wrapper := filepath.Join(f.dir, "ssh-wrapper")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\n"+line+"\nexec ssh \"$@\"\n"), 0o755); err != nil {
		f.t.Fatal(err)
	}
	return wrapper
}
