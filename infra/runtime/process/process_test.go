package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// helperEnv makes the test binary act as a separate zero502 command that starts an instance
// with a fresh Runtime and exits (the instance must outlive it).
const helperEnv = "ZERO502_PROCESS_TEST_STARTER"

func TestMain(m *testing.M) {
	if arg := os.Getenv(helperEnv); arg != "" {
		var in struct {
			Dir string
			Svc spec.Service
		}
		if err := json.Unmarshal([]byte(arg), &in); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		rt, err := New(in.Dir)
		if err == nil {
			_, err = rt.Start(context.Background(), "host-a", in.Svc)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// graceful exits 0 on SIGTERM; ignoring ignores it. Both leave a grandchild (sleep) in their
// process group, which Stop must not leave behind.
var (
	graceful = []string{"sh", "-c", `trap 'echo drained; exit 0' TERM; echo "hello $GREETING"; sleep 60 & wait`}
	ignoring = []string{"sh", "-c", `trap '' TERM; sleep 60`}
)

func newRuntime(t *testing.T, dir string) *Runtime {
	t.Helper()
	rt, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // never leave a process behind, nor an exit note still being written
		recs, _ := rt.records()
		for _, r := range recs {
			if liveness(r.PID, r.ProcStart) {
				syscall.Kill(-r.PID, syscall.SIGKILL)
			}
		}
		rt.cmu.Lock()
		children := make([]*child, 0, len(rt.children))
		for _, c := range rt.children {
			children = append(children, c)
		}
		rt.cmu.Unlock()
		for _, c := range children {
			select {
			case <-c.noted:
			case <-time.After(10 * time.Second):
				t.Errorf("a child's exit was not noted within 10s of SIGKILL")
			}
		}
	})
	return rt
}

func start(t *testing.T, rt *Runtime, svc spec.Service) runtime.Instance {
	t.Helper()
	inst, err := rt.Start(context.Background(), "host-a", svc)
	if err != nil {
		t.Fatalf("Start %s: %v", svc.Name, err)
	}
	return inst
}

// groupGone reports whether no live (non-zombie) process is left in process group pgid. Zombies
// count as gone: orphans are reaped by PID 1, which in a container may take its time.
func groupGone(pgid int) bool {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return true
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range dirs {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(data), ')')
		f := strings.Fields(string(data[i+1:]))
		if len(f) > 2 && f[2] == fmt.Sprint(pgid) && f[0] != "Z" && f[0] != "X" {
			return false
		}
	}
	return true
}

func TestStartListStopGracefully(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, t.TempDir())
	inst := start(t, rt, spec.Service{Name: "web", Version: "v1", Address: "127.0.0.1:19001",
		Command: graceful, Env: map[string]string{"GREETING": "from env"}})
	if !inst.Running() || inst.Host != "host-a" || inst.Version != "v1" || !strings.HasPrefix(inst.ID, "pid:") {
		t.Fatalf("Start = %+v, want a running host-a web v1 with a pid: id", inst)
	}

	all, err := rt.List(ctx, runtime.Filter{Host: "host-a", Service: "web"})
	if err != nil || len(all) != 1 || all[0].ID != inst.ID || !all[0].Running() || all[0].Address != "127.0.0.1:19001" {
		t.Fatalf("List = %+v %v, want the one running instance", all, err)
	}
	svc := spec.Service{Name: "web", Version: "v1", Address: "127.0.0.1:19001", Command: graceful, Env: map[string]string{"GREETING": "from env"}}
	if !all[0].Runs(svc) || all[0].Digest != svc.Digest() {
		t.Errorf("List's instance records digest %q, want %q: the instance runs its spec", all[0].Digest, svc.Digest())
	}
	svc.Env = map[string]string{"GREETING": "changed"}
	if all[0].Runs(svc) {
		t.Errorf("the instance started with GREETING=from env runs a spec with GREETING=changed, by Runs")
	}
	if other, _ := rt.List(ctx, runtime.Filter{Version: "v2"}); len(other) != 0 {
		t.Fatalf("List version v2 = %+v, want none", other)
	}
	poll.Until(t, 10*time.Second, "the env greeting in the log", func() bool {
		data, _ := os.ReadFile(rt.LogPath("web"))
		return strings.Contains(string(data), "hello from env")
	})

	st, err := rt.Stop(ctx, inst, 10*time.Second)
	if err != nil || st.Killed || st.ExitCode != 0 {
		t.Fatalf("Stop = %+v %v, want exit 0, not killed", st, err)
	}
	pid := mustPID(t, inst.ID)
	poll.Until(t, 10*time.Second, "the process group to be gone", func() bool { return groupGone(pid) })
	got, err := rt.Inspect(ctx, inst.ID)
	if err != nil || got.Running() || got.ExitCode != 0 {
		t.Fatalf("Inspect after stop = %+v %v, want exited 0", got, err)
	}
	if data, _ := os.ReadFile(rt.LogPath("web")); !strings.Contains(string(data), "drained") {
		t.Fatalf("log %q lacks the SIGTERM trap's output", data)
	}

	if err := rt.Remove(ctx, got); err != nil {
		t.Fatal(err)
	}
	if all, _ := rt.List(ctx, runtime.Filter{}); len(all) != 0 {
		t.Fatalf("List after Remove = %+v, want none", all)
	}
	if _, err := rt.Inspect(ctx, inst.ID); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Inspect after Remove = %v, want ErrNotFound", err)
	}
}

func TestIgnoringSIGTERMIsKilledAndReportedAsI2(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	inst := start(t, rt, spec.Service{Name: "stubborn", Version: "v1", Command: ignoring})
	st, err := rt.Stop(context.Background(), inst, 300*time.Millisecond)
	if !errors.Is(err, runtime.ErrKilled) || !st.Killed || st.ExitCode != 137 {
		t.Fatalf("Stop = %+v %v, want Killed, exit 137, an error wrapping ErrKilled", st, err)
	}
	if st.Took < 300*time.Millisecond {
		t.Fatalf("Stop took %s, before the 300ms grace ran out", st.Took)
	}
	pid := mustPID(t, inst.ID)
	poll.Until(t, 10*time.Second, "the group (sh and its sleep) to be gone", func() bool { return groupGone(pid) })
}

// A wrapper script that does not exec its server exits on the stop signal at once and leaves
// the server in its process group: the server gets the signal too, and the rest of the grace to
// drain, not an immediate SIGKILL; one that outlives the grace is SIGKILLed and reported (I2).
func TestAWrappersServerGetsTheStopSignalAndTheGrace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server string // what the wrapper runs without exec
		killed bool
	}{
		{"drains", `trap 'sleep 0.3; s=drained; echo "server: $s"; exit 0' TERM; s=up; echo "server: $s"; sleep 60 & wait`, false},
		{"ignores it", `trap '' TERM; s=up; echo "server: $s"; sleep 60`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRuntime(t, t.TempDir())
			wrapper := []string{"sh", "-c", "sh -c \"$0\"; echo wrapper done", tc.server}
			inst := start(t, rt, spec.Service{Name: "wrapped", Version: "v1", Command: wrapper})
			poll.Until(t, 10*time.Second, "the server under the wrapper", func() bool {
				data, _ := os.ReadFile(rt.LogPath("wrapped"))
				return strings.Contains(string(data), "server: up") // not the command's text, which the log's header quotes
			})
			st, err := rt.Stop(context.Background(), inst, 2*time.Second)
			if tc.killed {
				if !errors.Is(err, runtime.ErrKilled) || !st.Killed || st.Took < 2*time.Second {
					t.Fatalf("Stop = %+v %v; want the server SIGKILLed after the 2s grace, reported as ErrKilled", st, err)
				}
			} else {
				if err != nil || st.Killed {
					t.Fatalf("Stop = %+v %v; want a clean stop: the server drained within the grace", st, err)
				}
				if data, _ := os.ReadFile(rt.LogPath("wrapped")); !strings.Contains(string(data), "server: drained") {
					t.Fatalf("log %q: the server under the wrapper never got the stop signal", data)
				}
			}
			pid := mustPID(t, inst.ID)
			poll.Until(t, 10*time.Second, "the group to be gone", func() bool { return groupGone(pid) })
		})
	}
}

func TestGraceZeroKillsAtOnceWithoutError(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	inst := start(t, rt, spec.Service{Name: "web", Version: "v1", Command: graceful})
	st, err := rt.Stop(context.Background(), inst, 0)
	if err != nil || !st.Killed || st.ExitCode != 137 {
		t.Fatalf("Stop grace 0 = %+v %v, want killed (137) and no error", st, err)
	}
}

func TestStartRefusesASecondInstanceOfAService(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	inst := start(t, rt, spec.Service{Name: "web", Version: "v1", Command: graceful})
	_, err := rt.Start(context.Background(), "host-a", spec.Service{Name: "web", Version: "v2", Command: graceful})
	if err == nil || !strings.Contains(err.Error(), "already runs as "+inst.ID) {
		t.Fatalf("second Start = %v, want a refusal naming %s", err, inst.ID)
	}
	if err := rt.Remove(context.Background(), inst); err == nil {
		t.Fatal("Remove of a running instance succeeded")
	}
}

func TestInstancesOutliveTheCommandThatStartedThem(t *testing.T) {
	dir := t.TempDir()
	arg, _ := json.Marshal(map[string]any{"Dir": dir,
		"Svc": spec.Service{Name: "web", Version: "v1", Command: graceful}})
	starter := exec.Command(os.Args[0], "-test.run=^$")
	starter.Env = append(os.Environ(), helperEnv+"="+string(arg))
	if out, err := starter.CombinedOutput(); err != nil {
		t.Fatalf("starter command: %v: %s", err, out)
	}

	rt := newRuntime(t, dir) // a later command: the instance is not its child
	all, err := rt.List(context.Background(), runtime.Filter{Host: "host-a"})
	if err != nil || len(all) != 1 || !all[0].Running() {
		t.Fatalf("List from a new Runtime = %+v %v, want the running instance", all, err)
	}
	if _, err := rt.Start(context.Background(), "host-a", spec.Service{Name: "web", Version: "v2", Command: graceful}); err == nil {
		t.Fatal("a new Runtime started a second web while the first runs")
	}
	st, err := rt.Stop(context.Background(), all[0], 10*time.Second)
	if err != nil || st.Killed {
		t.Fatalf("Stop from a new Runtime = %+v %v, want a graceful stop", st, err)
	}
	got, err := rt.Inspect(context.Background(), all[0].ID)
	if err != nil || got.Running() {
		t.Fatalf("Inspect after Stop = %+v %v, want exited", got, err)
	}
}

func TestRecycledPIDIsNotTheInstance(t *testing.T) {
	ctx := context.Background()
	rt, err := New(t.TempDir()) // not newRuntime: its cleanup kills live records' groups
	if err != nil {
		t.Fatal(err)
	}
	me, err := readStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Records pointing at a live pid (this test process): one with its real start time, one
	// with another (the instance died and the kernel gave its pid to someone else).
	for _, r := range []record{
		{PID: os.Getpid(), ProcStart: me.Start, Host: "host-a", Service: "same", Version: "v1"},
		{PID: os.Getpid(), ProcStart: me.Start + 1, Host: "host-a", Service: "recycled", Version: "v1"},
	} {
		if err := rt.writeRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	all, err := rt.List(ctx, runtime.Filter{})
	if err != nil || len(all) != 2 {
		t.Fatalf("List = %+v %v", all, err)
	}
	if all[0].Service != "recycled" || all[0].Running() || all[0].ExitCode != -1 {
		t.Fatalf("recycled-pid record = %+v, want exited with unknown code", all[0])
	}
	if !all[1].Running() {
		t.Fatalf("same-pid-same-start record = %+v, want running", all[1])
	}
	if st, err := rt.Stop(ctx, all[0], time.Second); err != nil || st.Killed {
		t.Fatalf("Stop of the recycled record = %+v %v, want a no-op (and this test process alive)", st, err)
	}
}

func TestExitAtOnceFailsStartWithTheLogTail(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	_, err := rt.Start(context.Background(), "host-a", spec.Service{Name: "web", Version: "v9",
		Command: []string{"sh", "-c", "echo 'listen 127.0.0.1:19001: address already in use' >&2; exit 3"}})
	if err == nil || !strings.Contains(err.Error(), "code 3") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Start = %v, want an error with code 3 and the log tail", err)
	}
	// The failed start does not block the next one.
	start(t, rt, spec.Service{Name: "web", Version: "v1", Command: graceful})
}

func TestStartRejectsServicesItCannotRun(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	for _, tc := range []struct {
		svc  spec.Service
		want string
	}{
		{spec.Service{Name: "web", Image: "zero502/app:v1"}, "has no command"},
		{spec.Service{Name: "../etc", Command: []string{"true"}}, "plain file name"},
		{spec.Service{Name: "web", Command: []string{filepath.Join(t.TempDir(), "missing")}}, "start"},
	} {
		if _, err := rt.Start(context.Background(), "host-a", tc.svc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("Start %+v = %v, want an error containing %q", tc.svc, err, tc.want)
		}
	}
}

func TestParseStatCountsFieldsFromTheLastParen(t *testing.T) {
	line := "4242 (we ird) (name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10\n"
	st, err := parseStat([]byte(line))
	if err != nil || st.State != 'S' || st.Start != 987654 {
		t.Fatalf("parseStat = %+v %v, want state S start 987654", st, err)
	}
	if _, err := parseStat([]byte("4242 (x) S 1")); err == nil {
		t.Fatal("parseStat accepted a truncated line")
	}
}

func mustPID(t *testing.T, id string) int {
	t.Helper()
	var pid int
	if _, err := fmt.Sscanf(id, "pid:%d", &pid); err != nil {
		t.Fatalf("instance id %q: %v", id, err)
	}
	return pid
}

// quitOnly exits 0 on SIGQUIT (nginx's graceful stop) and ignores SIGTERM.
var quitOnly = []string{"sh", "-c", `trap "exit 0" QUIT; trap "" TERM; while :; do sleep 0.05; done`}

func TestStopSendsTheServicesStopSignal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rt := newRuntime(t, dir)
	inst := start(t, rt, spec.Service{Name: "nginx", Version: "v1", Command: quitOnly, StopSignal: "SIGQUIT"})
	if inst.StopSignal != "SIGQUIT" {
		t.Fatalf("Start = %+v, want stop signal SIGQUIT", inst)
	}
	// A later command finds the signal in the record.
	later := newRuntime(t, dir)
	all, err := later.List(ctx, runtime.Filter{Service: "nginx"})
	if err != nil || len(all) != 1 || all[0].StopSignal != "SIGQUIT" {
		t.Fatalf("List from a new Runtime = %+v %v, want the instance with stop signal SIGQUIT", all, err)
	}
	st, err := rt.Stop(ctx, all[0], 10*time.Second) // rt: its parent, which sees the exit code
	if err != nil || st.Killed || st.ExitCode != 0 {
		t.Fatalf("Stop with stop_signal SIGQUIT = %+v %v, want exit 0, not killed", st, err)
	}
	poll.Until(t, 10*time.Second, "the group to be gone", func() bool { return groupGone(mustPID(t, inst.ID)) })
}

func TestTheDefaultStopSignalIsSIGTERMThenSIGKILL(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	inst := start(t, rt, spec.Service{Name: "nginx", Version: "v1", Command: quitOnly})
	st, err := rt.Stop(context.Background(), inst, 300*time.Millisecond)
	if !errors.Is(err, runtime.ErrKilled) || !st.Killed || st.ExitCode != 137 || !strings.Contains(err.Error(), "after SIGTERM") {
		t.Fatalf("Stop without stop_signal = %+v %v, want SIGTERM ignored, then killed (137, ErrKilled)", st, err)
	}
}

func TestStartRefusesAnUnknownStopSignal(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	_, err := rt.Start(context.Background(), "host-a", spec.Service{Name: "web", Version: "v1", Command: graceful, StopSignal: "SIGSTOP"})
	if err == nil || !strings.Contains(err.Error(), `stop_signal "SIGSTOP"`) {
		t.Fatalf("Start with stop_signal SIGSTOP = %v, want a refusal naming it", err)
	}
}

// A start-first service runs two instances side by side during a deploy, one per port: each has
// its own record, List shows both, a third on a port in use is refused, and stopping and
// removing one leaves the other running and listed.
func TestStartFirstServiceRunsOneInstancePerPort(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	ctx := context.Background()
	svc := spec.Service{Name: "web", Version: "v1", Command: graceful, Ports: []int{19101, 19102}, Port: 19101, Address: "127.0.0.1:19101"}
	old := start(t, rt, svc)
	svc.Version, svc.Port, svc.Address = "v2", 19102, "127.0.0.1:19102"
	fresh := start(t, rt, svc)
	insts, err := rt.List(ctx, runtime.Filter{Service: "web"})
	if err != nil || len(insts) != 2 || !insts[0].Running() || !insts[1].Running() {
		t.Fatalf("List = %+v %v, want both instances running", insts, err)
	}
	svc.Version = "v3"
	if _, err := rt.Start(ctx, "host-a", svc); err == nil || !strings.Contains(err.Error(), "already runs as "+fresh.ID+" on 127.0.0.1:19102") {
		t.Fatalf("a third instance on a port in use: %v, want refused naming the one there", err)
	}
	if _, err := rt.Stop(ctx, old, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := rt.Remove(ctx, old); err != nil {
		t.Fatal(err)
	}
	insts, err = rt.List(ctx, runtime.Filter{Service: "web"})
	if err != nil || len(insts) != 1 || insts[0].ID != fresh.ID || !insts[0].Running() {
		t.Fatalf("List after stopping the old = %+v %v, want the new one alone, running", insts, err)
	}
}

// A service whose first process (the group's leader) exits while what it started lives on in its
// process group (a wrapper's server it did not exec, a sidecar started with &) has crashed: it
// reads as exited with the leader's code. But what it left is not forgotten: Remove refuses while
// it lives, and Stop gives it the stop signal and the grace, then SIGKILL (reported, I2).
func TestStopOfAnExitedLeaderStopsWhatItLeftInItsGroup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		left   string // what the leader starts with & before it exits
		killed bool
	}{
		{"drains", `sleep 300`, false},
		{"ignores it", `(trap '' TERM; sleep 300)`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			rt := newRuntime(t, dir)
			exit := filepath.Join(dir, "exit-now") // the leader exits once it exists: after Start
			cmd := []string{"sh", "-c", tc.left + ` & while [ ! -e "$0" ]; do sleep 0.01; done; exit 3`, exit}
			inst := start(t, rt, spec.Service{Name: "wrapped", Version: "v1", Address: "127.0.0.1:19201", Command: cmd})
			pid := mustPID(t, inst.ID)
			t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) }) // its record goes: newRuntime's cleanup would not see it
			if err := os.WriteFile(exit, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			var got runtime.Instance
			poll.Until(t, 10*time.Second, "Inspect to say exited", func() bool {
				var err error
				got, err = rt.Inspect(ctx, inst.ID)
				return err == nil && !got.Running()
			})
			if got.ExitCode != 3 {
				t.Fatalf("Inspect = %+v, want exited with the leader's code 3", got)
			}
			if groupGone(pid) {
				t.Fatal("the leader's background process is gone already: the test proves nothing")
			}
			if err := rt.Remove(ctx, got); err == nil || !strings.Contains(err.Error(), "process group") {
				t.Fatalf("Remove while the group lives = %v, want a refusal naming its process group", err)
			}
			if _, err := rt.Start(ctx, "host-a", spec.Service{Name: "wrapped", Version: "v2", Address: "127.0.0.1:19201", Command: graceful}); err == nil ||
				!strings.Contains(err.Error(), inst.ID) || !strings.Contains(err.Error(), "process group") {
				t.Fatalf("Start of v2 while what v1 left runs = %v, want a refusal naming %s and its process group", err, inst.ID)
			}
			st, err := rt.Stop(ctx, got, time.Second)
			if tc.killed {
				if !errors.Is(err, runtime.ErrKilled) || !st.Killed || st.ExitCode != 3 || st.Took < time.Second {
					t.Fatalf("Stop = %+v %v; want what the leader left SIGKILLed after the 1s grace, reported as ErrKilled, exit code 3", st, err)
				}
			} else if err != nil || st.Killed || st.ExitCode != 3 {
				t.Fatalf("Stop = %+v %v; want exit code 3, what the leader left gone on the stop signal, not killed", st, err)
			}
			if err := rt.Remove(ctx, got); err != nil {
				t.Fatalf("Remove after Stop: %v", err)
			}
			poll.Until(t, 5*time.Second, "the process group to be gone", func() bool { return groupGone(pid) })
		})
	}
}

// A leader's leftover is judged by its process group, whatever its pid: after a pid wrap-around
// (pid_max reached) what the leader forked has a lower pid than the leader, and Stop of the
// crashed leader must still give it the stop signal, the grace and SIGKILL, so it does not keep
// the service's port. The wrap is forced with /proc/sys/kernel/ns_last_pid (root only).
func TestStopOfAnExitedLeaderStopsALeftoverWithALowerPid(t *testing.T) {
	const lastPid = "/proc/sys/kernel/ns_last_pid"
	if os.Geteuid() != 0 {
		t.Skip("needs root to write " + lastPid)
	}
	if f, err := os.OpenFile(lastPid, os.O_WRONLY, 0); err != nil {
		t.Skipf("cannot force a pid wrap-around: %v", err)
	} else {
		f.Close()
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	rt := newRuntime(t, filepath.Join(dir, "state"))
	svc := spec.Service{Name: "web", Version: "v1", Command: []string{"/bin/sh", "-c",
		"echo 400 > " + lastPid + "; sleep 300 & echo $! > " + pidFile + "; sleep 0.4; exit 3"}}
	inst := start(t, rt, svc)
	poll.Until(t, 5*time.Second, "the leader to exit", func() bool {
		cur, err := rt.Inspect(context.Background(), inst.ID)
		return err == nil && !cur.Running()
	})
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	defer syscall.Kill(child, syscall.SIGKILL)
	leader := mustPID(t, inst.ID)
	if child <= 0 || child >= leader {
		t.Skipf("no wrap-around forced: the leader is pid %d, its child %d", leader, child)
	}
	st, err := rt.Stop(context.Background(), inst, time.Second)
	if err != nil || st.ExitCode != 3 {
		t.Fatalf("Stop = %+v, %v; want the leader's exit code 3 and no error", st, err)
	}
	if s, err := readStat(child); err == nil && s.State != 'Z' {
		t.Fatalf("after Stop, the leader's child (pid %d, in group %d) still runs (state %c)", child, leader, s.State)
	}
	if err := rt.Remove(context.Background(), inst); err != nil {
		t.Fatalf("Remove after Stop: %v", err)
	}
}

// A process that exits at once fails Start; what it started in its group goes with it.
func TestExitAtOnceTakesWhatItLeftInItsGroup(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	var pid int
	t.Cleanup(func() {
		if pid > 0 {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
	})
	_, err := rt.Start(context.Background(), "host-a", spec.Service{Name: "web", Version: "v1",
		Command: []string{"sh", "-c", "sleep 300 & exit 3"}})
	if err == nil || !strings.Contains(err.Error(), "code 3") {
		t.Fatalf("Start = %v, want an error with code 3", err)
	}
	recs, _ := rt.records()
	if len(recs) != 1 {
		t.Fatalf("records after the failed start = %+v, want its one record", recs)
	}
	pid = recs[0].PID
	poll.Until(t, 5*time.Second, "the process group to be gone", func() bool { return groupGone(pid) })
}

// A service's log is appended to for as long as the host runs it, and never rotated by zero502:
// a start that fails at once shows the end of this run's output without reading the log's past
// into memory (a crash-looping service healed by the watchdog, its log grown to gigabytes).
func TestExitAtOnceReadsOnlyTheEndOfALongLog(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	const past = 64 << 20
	if err := os.WriteFile(rt.LogPath("web"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(rt.LogPath("web"), past); err != nil { // a long past, sparse on disk
		t.Fatal(err)
	}
	var before, after runtimemetrics
	before.read()
	_, err := rt.Start(context.Background(), "host-a", spec.Service{Name: "web", Version: "v9",
		Command: []string{"sh", "-c", "echo 'listen 127.0.0.1:19001: address already in use' >&2; exit 3"}})
	after.read()
	if err == nil || !strings.Contains(err.Error(), "code 3") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Start = %v, want an error with code 3 and the log tail", err)
	}
	if got := after.alloc - before.alloc; got > past/4 {
		t.Fatalf("a failed start allocated %d bytes beside a log of %d: it read the log's past, not its end", got, past)
	}
}

// runtimemetrics is what TestExitAtOnceReadsOnlyTheEndOfALongLog reads of the Go runtime.
type runtimemetrics struct{ alloc uint64 }

func (m *runtimemetrics) read() {
	var s goruntime.MemStats
	goruntime.ReadMemStats(&s)
	m.alloc = s.TotalAlloc
}
